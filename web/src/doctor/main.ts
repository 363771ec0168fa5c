// The doctor's page (`pipelab doctor --ui ADDR`): polls the doctor's JSON
// API once a second (`/api/doctor/summary`, then `/api/doctor/flights` for
// each listed connection, only the flights since the last poll) and draws
// the totals, the missed pipelines with "open in playground", the depth
// histogram and a timeline of flights per connection.
import { count, el, fmtInt, metrics } from '../lessons/ui.js';
import { playgroundLink } from './playgroundLink.js';
import { timeline } from './timeline.js';
import type { ConnectionFlights, DepthBucket, Flight, Missed, UiSummary } from './types.js';

/** Flights kept per connection on the page (the doctor keeps its own recent ones). */
const KEEP = 256;
const POLL_MS = 1000;

const $ = (id: string) => document.getElementById(id)!;
const flights = new Map<number, Flight[]>();

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
  if (u.missed.length === 0) {
    $('missed').replaceChildren(el('p', { class: 'empty' }, 'None yet: no run of single-command round trips sent back to back.'));
    return;
  }
  const items = await Promise.all(
    u.missed.map(async (m: Missed) => {
      const a = el('a', { href: await playgroundLink(u.playground_url, m), target: '_blank', rel: 'noopener', class: 'open-playground' }, 'open in playground');
      return el(
        'li',
        { class: 'missed', 'data-connection': String(m.connection), 'data-commands': String(m.commands), 'data-pattern': m.pattern },
        el('span', { class: 'what' }, m.description),
        el('span', {}, `connection ${m.connection} (${m.peer})`),
        el('span', { class: 'saving', 'data-metric': 'saving_ms', 'data-value': String(m.saving_ms) }, `a pipeline would save ${m.saving_ms.toFixed(1)} ms at ${m.rtt_ms} ms RTT`),
        ...(m.going_on ? [el('span', { class: 'badge' }, 'going on')] : []),
        a,
      );
    }),
  );
  $('missed').replaceChildren(el('ul', { class: 'missed-list' }, ...items));
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
  const conns = u.summary.recent_connections;
  const fresh = await Promise.all(
    conns.map((c) => {
      const kept = flights.get(c.connection) ?? [];
      const since = kept.length ? kept[kept.length - 1].start_us : 0;
      return getJson<ConnectionFlights>(`api/doctor/flights?connection=${c.connection}&since=${since}`).catch(() => null);
    }),
  );
  const rows: HTMLElement[] = [];
  conns.forEach((c, i) => {
    const got = fresh[i];
    const kept = (flights.get(c.connection) ?? []).concat(got?.recent_flights ?? []).slice(-KEEP);
    flights.set(c.connection, kept);
    const state = got?.open === false ? 'closed' : 'open';
    rows.push(
      el(
        'div',
        { class: 'conn', 'data-connection': String(c.connection) },
        el('span', { class: 'label', title: c.peer }, `#${c.connection} ${c.peer} · ${count(c.flights, 'flight')}, depth ≤ ${fmtInt(c.max_depth)} · ${state}`),
        timeline(kept),
      ),
    );
  });
  for (const id of [...flights.keys()]) if (!conns.some((c) => c.connection === id)) flights.delete(id);
  $('timelines').replaceChildren(...(rows.length ? rows : [el('p', { class: 'empty' }, 'No connection yet: point your application at the doctor.')]));
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
