// The doctor's page (`pipelab doctor --ui ADDR`): polls the doctor's JSON
// API once a second (`/api/doctor/summary`, then `/api/doctor/flights` for
// each listed connection, only the flights since the last poll) and draws
// the totals, the missed pipelines with "open in playground", the depth
// histogram and a timeline of flights per connection.
import { count, el, fmtInt, metrics } from '../lessons/ui.js';
import { playgroundLink } from './playgroundLink.js';
import type { ConnectionFlights, DepthBucket, UiSummary } from './types.js';
import { FlightLog, missedList } from './views.js';

const POLL_MS = 1000;

const $ = (id: string) => document.getElementById(id)!;
const log = new FlightLog((c, since) => getJson<ConnectionFlights>(`api/doctor/flights?connection=${c}&since=${since}`).catch(() => null));

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return (await res.json()) as T;
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
    const u = await getJson<UiSummary>('api/doctor/summary');
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
