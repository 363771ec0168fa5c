// The doctor's page (`pipelab doctor --ui ADDR`): polls the doctor's JSON
// API once a second (`/api/doctor/summary`, then `/api/doctor/flights` for
// each listed connection, only the flights since the last poll) and draws
// the totals, the missed pipelines with "open in playground", the depth
// histogram and a timeline of flights per connection. `pipelab serve`
// serves it too, at /doctor.html: there the API is /api/v1/doctor, and
// only with --doctor-listen; without it the page says how to get a doctor.
import { withToken } from '../api/token.js';
import { el } from '../dom.js';
import { count, fmtInt, metrics } from '../ui/figures.js';
import { playgroundLink } from './playgroundLink.js';
import type { ConnectionFlights, DepthBucket, UiSummary } from './types.js';
import { FlightLog, missedList } from './views.js';

const POLL_MS = 1000;

const $ = (id: string) => document.getElementById(id)!;
const log = new FlightLog((c, since) => getJson<ConnectionFlights>(`flights?connection=${c}&since=${since}`).catch(() => null));

/** The doctor's JSON API relative to the page (`api/doctor/` beside `pipelab doctor --ui`'s page), once found. */
let api: string | null = null;

async function getJson<T>(path: string): Promise<T> {
  const url = `${api}${path}`;
  const res = await fetch(url, { headers: withToken() });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

/** Where the doctor's API is, or why this server has none to show. */
type Found = { api: string } | { none: 'no_doctor' | 'token' };

/**
 * `pipelab doctor --ui` serves this page at `/` with its API beside it.
 * `pipelab serve` serves it at /doctor.html (the playground is its `/`) and
 * runs a doctor only with --doctor-listen, as its /api/v1/info says: asked
 * first, so that a server without a doctor answers no request with a 404.
 */
async function locate(): Promise<Found> {
  if (!/(^|\/)doctor\.html$/.test(location.pathname)) return { api: 'api/doctor/' };
  const res = await fetch('api/v1/info', { headers: withToken() });
  if (res.status === 401) return { none: 'token' };
  // The doctor's own server has no /api/v1 (its page answers at /doctor.html too).
  if (!res.ok) return { api: 'api/doctor/' };
  const info = (await res.json()) as { doctor?: unknown };
  return info.doctor ? { api: 'api/v1/doctor/' } : { none: 'no_doctor' };
}

/** In place of the empty panels: this server runs no doctor, and the two ways to get one (docs/doctor.md). */
function showNoDoctor(why: 'no_doctor' | 'token') {
  const code = (t: string) => el('code', {}, t);
  const said =
    why === 'token'
      ? el(
          'p',
          {},
          'This pipelab serve asks for an API token before it says whether a doctor runs here, and this tab holds none (the playground keeps the one entered there for its own tab). With the token, ',
          code('GET /api/v1/doctor/summary'),
          ' answers when one does.',
        )
      : el(
          'p',
          {},
          'This pipelab serve was started without ',
          code('--doctor-listen'),
          ', so no doctor watches an application here and there is nothing to show.',
        );
  const panel = el(
    'section',
    { class: 'panel no-doctor', id: 'no-doctor', 'data-why': why, 'aria-labelledby': 'no-doctor-title' },
    el('h2', { id: 'no-doctor-title' }, why === 'token' ? 'This server needs an API token' : 'No doctor runs on this server'),
    said,
    el('p', {}, 'To watch your application\'s round trips, either:'),
    el(
      'ul',
      {},
      el('li', {}, 'restart the server with one: ', code('pipelab serve --doctor-listen 127.0.0.1:6380'), ', point your application at 127.0.0.1:6380 instead of Redis, and reload this page (tutorial lesson 10 shows it too); or'),
      el(
        'li',
        {},
        'run the doctor on its own, with its page: ',
        code('pipelab doctor --listen 127.0.0.1:6380 --upstream redis://127.0.0.1:6379 --ui 127.0.0.1:8081'),
        ', and open http://127.0.0.1:8081/.',
      ),
    ),
    el('p', {}, 'Both are described in docs/doctor.md. ', el('a', { href: './' }, 'Back to the playground')),
  );
  const main = $('doctor');
  for (const s of main.querySelectorAll<HTMLElement>('section')) s.hidden = true;
  main.prepend(panel);
}

function drawTotals(u: UiSummary) {
  const s = u.summary;
  const dl = metrics([
    { key: 'connections', label: 'connections', value: s.connections, text: fmtInt(s.connections) },
    { key: 'commands', label: 'commands', value: s.commands, text: fmtInt(s.commands) },
    { key: 'flights', label: 'round trips', value: s.flights, text: fmtInt(s.flights) },
    { key: 'round_trips_per_s', label: 'round trips/s', value: s.round_trips_per_s, text: fmtInt(s.round_trips_per_s) },
    { key: 'wait_share', label: 'waiting on Redis', value: s.wait_share, text: `${Math.round(s.wait_share * 100)}%` },
    { key: 'missed_pipelines', label: 'missed pipelines (ended)', value: s.missed_pipelines, text: fmtInt(s.missed_pipelines) },
    { key: 'saving_ms', label: `saving at ${s.rtt_ms} ms RTT`, value: s.saving_ms, text: `${s.saving_ms.toFixed(1)} ms` },
  ]);
  dl.className = 'totals';
  $('totals').replaceChildren(dl);
}

async function drawMissed(u: UiSummary) {
  $('missed').replaceChildren(await missedList(u.missed, (m) => playgroundLink(u.playground_url, m)));
}

function bucketName(b: DepthBucket): string {
  if (b.max === null) return `${fmtInt(b.min)}+`;
  return b.max === b.min ? fmtInt(b.min) : `${fmtInt(b.min)}–${fmtInt(b.max)}`;
}

function drawDepth(buckets: DepthBucket[]) {
  const most = Math.max(1, ...buckets.map((b) => b.flights));
  $('depth').replaceChildren(
    ...buckets.map((b) =>
      el(
        'div',
        { class: 'depth-row', 'data-min': String(b.min), 'data-flights': String(b.flights) },
        el('span', {}, bucketName(b)),
        el('div', { class: 'depth-bar', style: `width: ${(100 * b.flights) / most}%` }),
        el('span', {}, `${count(b.flights, 'round trip')}, ${count(b.commands, 'command')}`),
      ),
    ),
  );
}

async function drawTimelines(u: UiSummary) {
  $('timelines').replaceChildren(...(await log.rows(u.summary.recent_connections)));
}

async function poll() {
  try {
    if (api === null) {
      const found = await locate();
      if ('none' in found) {
        $('banner').hidden = true;
        // A server's doctor is fixed when it starts: nothing to poll for.
        return showNoDoctor(found.none);
      }
      api = found.api;
    }
    const u = await getJson<UiSummary>('summary');
    $('banner').hidden = true;
    drawTotals(u);
    drawDepth(u.summary.depth);
    await Promise.all([drawMissed(u), drawTimelines(u)]);
  } catch (e) {
    const b = $('banner');
    b.textContent = `The doctor does not answer (${(e as Error).message}); it may have stopped.`;
    b.hidden = false;
  }
  setTimeout(poll, POLL_MS);
}

void poll();
