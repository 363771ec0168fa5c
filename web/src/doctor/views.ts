// What the doctor's page (`pipelab doctor --ui`, ./main.ts) and the
// tutorial's live panel (../lessons/lessonApp.ts, `pipelab serve
// --doctor-listen`) both draw: the missed pipelines, and a timeline of
// flights per connection kept across polls.
import { el } from '../dom.js';
import { count, fmtInt } from '../ui/figures.js';
import { timeline } from './timeline.js';
import type { ConnectionFlights, ConnectionReport, Flight, Missed } from './types.js';
import './views.css';

/** Flights kept per connection (the doctor keeps its own recent ones). */
const KEEP = 256;

/** The missed pipelines, largest saving first; `link` gives each its "open in playground" address. */
export async function missedList(missed: Missed[], link: (m: Missed) => Promise<string>): Promise<HTMLElement> {
  if (missed.length === 0) return el('p', { class: 'empty' }, 'None yet: no run of single-command round trips sent back to back.');
  const items = await Promise.all(
    missed.map(async (m) => {
      const a = el('a', { href: await link(m), target: '_blank', rel: 'noopener', class: 'open-playground' }, 'open in playground');
      return el(
        'li',
        { class: 'missed', 'data-connection': String(m.connection), 'data-commands': String(m.commands), 'data-pattern': m.pattern },
        el('span', { class: 'what' }, m.description),
        el('span', {}, `connection ${m.connection} (${m.peer})`),
        el('span', { class: 'saving', 'data-metric': 'saving_ms', 'data-value': String(m.saving_ms) }, `a pipeline would save ${m.saving_ms.toFixed(1)} ms at ${m.rtt_ms} ms RTT`),
        ...(m.going_on ? [el('span', { class: 'badge' }, 'going on')] : []),
        a,
        ...(m.why ? [el('span', { class: 'why' }, m.why)] : []),
      );
    }),
  );
  return el('ul', { class: 'missed-list' }, ...items);
}

/**
 * Each listed connection's flights on a timeline: every poll asks only for
 * those since the last one kept (`fetchFlights`, null when it fails) and
 * keeps the last KEEP; connections no longer listed are forgotten.
 */
export class FlightLog {
  private readonly flights = new Map<number, Flight[]>();

  constructor(private readonly fetchFlights: (connection: number, since: number) => Promise<ConnectionFlights | null>) {}

  /** A `.conn` row per connection of `conns`, or a line saying there is none yet. */
  async rows(conns: ConnectionReport[]): Promise<HTMLElement[]> {
    const fresh = await Promise.all(
      conns.map((c) => {
        const kept = this.flights.get(c.connection) ?? [];
        return this.fetchFlights(c.connection, kept.length ? kept[kept.length - 1].start_us : 0);
      }),
    );
    const rows = conns.map((c, i) => {
      const got = fresh[i];
      const kept = (this.flights.get(c.connection) ?? []).concat(got?.recent_flights ?? []).slice(-KEEP);
      this.flights.set(c.connection, kept);
      const state = got?.open === false ? 'closed' : 'open';
      return el(
        'div',
        { class: 'conn', 'data-connection': String(c.connection) },
        el('span', { class: 'label', title: c.peer }, `#${c.connection} ${c.peer} · ${count(c.flights, 'flight')}, depth ≤ ${fmtInt(c.max_depth)} · ${state}`),
        timeline(kept),
      );
    });
    for (const id of [...this.flights.keys()]) if (!conns.some((c) => c.connection === id)) this.flights.delete(id);
    return rows.length ? rows : [el('p', { class: 'empty' }, 'No connection yet: point your application at the doctor.')];
  }
}
