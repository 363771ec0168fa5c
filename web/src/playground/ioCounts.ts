// The summary box's I/O counts, when the response has them: the client's
// write() and read() calls, auto mode's coalesced writes and the Redis
// server's reads and writes (`summary.server`). Items as summary.ts draws
// them: [label, text, data-key].
import type { Summary } from '../api/client.js';

const n = (x: number) => x.toLocaleString('en-US');

export function ioCountItems(s: Summary): Array<[string, string, string]> {
  const items: Array<[string, string, string]> = [];
  items.push(['write / read calls', `${n(s.write_syscalls)} / ${s.read_syscalls == null ? '—' : n(s.read_syscalls)}`, 'syscalls']);
  if (s.auto) items.push(['coalesced writes', `${n(s.auto.writes)} (${s.auto.mean_commands_per_write.toFixed(1)} per write, max ${n(s.auto.max_commands_per_write)}; ${n(s.auto.clients)} clients)`, 'auto']);
  if (s.server) items.push([`Redis reads / writes${s.server.approximate ? ' (approx.)' : ''}`, `${n(s.server.reads)} / ${n(s.server.writes)}`, 'server']);
  return items;
}
