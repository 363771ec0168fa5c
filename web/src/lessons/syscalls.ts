// Both sides' system calls for a batch, as a table: the client's (pipelab's
// own `write` and `read` calls on the connection, `summary.write_syscalls`,
// `read_syscalls`) and the Redis server's (`summary.server`: deltas of INFO
// stats `total_reads_processed` / `total_writes_processed` and commandstats
// usec, approximate when other clients shared the server). For lesson 9 and
// the compare view.
import type { Summary } from '../api/client.js';
import { el, fmtInt, table } from './ui.js';

export interface ModeSummary {
  mode: string;
  summary: Summary;
}

const orDash = (n: number | null | undefined) => (n == null ? '—' : fmtInt(n));

/** One row per run: client writes and reads, Redis reads and writes, Redis's command time. */
export function syscallTable(runs: ModeSummary[]): HTMLElement {
  const approximate = runs.some((r) => r.summary.server?.approximate);
  const unknown = runs.some((r) => r.summary.server == null);
  return el(
    'div',
    { class: 'syscalls' },
    table(
      ['mode', 'client write()', 'client read()', 'Redis reads', 'Redis writes', 'Redis command time'],
      runs.map((r) => {
        const s = r.summary;
        const cell = (key: string, v: number | null | undefined) => el('span', { 'data-mode': r.mode, 'data-syscall': key, 'data-value': String(v ?? '') }, orDash(v));
        return [
          r.mode,
          cell('client_writes', s.write_syscalls),
          cell('client_reads', s.read_syscalls),
          cell('server_reads', s.server?.reads),
          cell('server_writes', s.server?.writes),
          el('span', { 'data-mode': r.mode, 'data-syscall': 'server_usec', 'data-value': String(s.server?.usec ?? '') }, s.server ? `${fmtInt(s.server.usec)} µs` : '—'),
        ];
      }),
      { 'data-table': 'syscalls' },
    ),
    el(
      'p',
      { class: 'note' },
      'Client: the system calls pipelab made on the batch\'s connection. Redis: the server\'s INFO counters (reads and writes it processed, microseconds it spent in commands) read before and after each run' +
        (approximate ? '; other clients used the server meanwhile, so its counts are approximate.' : '.') +
        (unknown ? ' — : the server could not be asked.' : ''),
    ),
  );
}
