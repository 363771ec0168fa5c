// The batch's commands the server refuses whatever their arguments, known
// before Run: GET /api/v1/info's `refused` (the server's command table and
// this caller's token decide it, engine/src/commands/refused.rs) matched
// against each command's argv. The page marks them in the editors and keeps
// Run off with the reason, instead of learning it from the 400 after Run.
// Refusals that depend on arguments (BLPOP k 0) are still the server's to say.
import type { InfoResponse, Mode } from '../api/client.js';
import type { BatchSnapshot } from '../editor/snapshot.js';
import { asUtf8 } from '../export/bytes.js';
import { commandsOf } from '../export/fromText.js';

/** `/info`'s list; empty while it has not answered. */
export type RefusedList = InfoResponse['refused'];

/** One command of the batch the server will refuse: its index (0-based), its line (1-based) and why. */
export interface RefusedHit {
  index: number;
  line: number;
  message: string;
}

/** Most commands marked (the first is named in the warning). */
export const MAX_MARKED = 100;

/** `s` as a literal inside a regular expression. */
const literal = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * The commands of `snap` refused in `mode`, in order, at most `max`. An
 * entry matches an argv whose first words are its `command`'s
 * (case-insensitively; the longest entry wins: `CLIENT KILL` over `CLIENT`).
 * One regular-expression pass over the text finds the lines that start with
 * a refused name (optionally quoted), so a batch of 200,000 SETs costs one
 * scan; only those commands are split into their argv, by the wasm splitter
 * (as Redis's `sdssplitargs`).
 */
export function refusedIn(list: RefusedList, snap: BatchSnapshot, mode: Mode, max = MAX_MARKED): RefusedHit[] {
  const byFirst = new Map<string, { words: string[]; message: string }[]>();
  for (const r of list) {
    if (!r.modes.includes(mode)) continue;
    const words = r.command.toLowerCase().split(' ');
    const at = byFirst.get(words[0]!) ?? [];
    at.push({ words, message: r.message });
    byFirst.set(words[0]!, at.sort((a, b) => b.words.length - a.words.length));
  }
  const hits: RefusedHit[] = [];
  if (byFirst.size === 0 || snap.inlineErrors > 0 || snap.respError) return hits;
  const names = new RegExp(`^[ \\t]*["']?(?:${[...byFirst.keys()].map(literal).join('|')})(?=[\\s"']|$)`, 'gim');
  let line = 1;
  let counted = 0; // text counted up to here for `line`
  let k = 0;
  for (let m = names.exec(snap.inlineText); m && hits.length < max; m = names.exec(snap.inlineText)) {
    // The command this line starts (textFrom is sorted); none: a line inside a quoted argument.
    while (k < snap.commands && snap.textTo[k]! <= m.index) k++;
    if (k >= snap.commands || snap.textFrom[k]! > m.index + m[0].length) continue;
    const from = snap.textFrom[k]!;
    let argv: string[];
    try {
      argv = (commandsOf(snap.inlineText.slice(from, snap.textTo[k]!))[0] ?? []).map((a) => (asUtf8(a) ?? '').toLowerCase());
    } catch {
      continue;
    }
    const hit = argv.length > 0 ? byFirst.get(argv[0]!)?.find((e) => e.words.length <= argv.length && e.words.every((w, i) => argv[i] === w)) : undefined;
    if (!hit) continue;
    for (; counted < from; counted++) if (snap.inlineText.charCodeAt(counted) === 10) line++;
    hits.push({ index: k, line, message: hit.message });
    k++;
  }
  return hits;
}

/** The warning above Run for `hits` (none: null). Commands are counted from 1, as the results table counts them. */
export function refusedWarning(hits: RefusedHit[]): string | null {
  const h = hits[0];
  if (!h) return null;
  const more = hits.length > 1 ? ` (${hits.length >= MAX_MARKED ? `${MAX_MARKED} or more` : hits.length} commands of this batch are refused, marked in the editor)` : '';
  return `Command ${h.index + 1} (line ${h.line}) will be refused by this server: ${h.message}${more}. Remove it to run the batch.`;
}
