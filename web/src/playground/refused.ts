// The batch's commands the server refuses whatever their arguments, known
// before Run: GET /api/v1/info's `refused` (the server's command table and
// this caller's token decide it, backend/src/commands/refused.rs) matched
// against each command's argv. The page marks them in the editors and keeps
// Run off with the reason, instead of learning it from the 400 after Run.
// Refusals that depend on arguments (BLPOP k 0) are still the server's to say.
import type { InfoResponse, Mode } from '../api/client.js';
import type { BatchSnapshot } from '../editor/views.js';
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

/** The first word of a command's inline text (quotes allowed), lowercase: a cheap filter before the exact argv. */
const FIRST_WORD = /^\s*["']?([^\s"']+)/;

/**
 * The commands of `snap` refused in `mode`, in order, at most `max`. An
 * entry matches an argv whose first words are its `command`'s
 * (case-insensitively; the longest entry wins: `CLIENT KILL` over `CLIENT`).
 * Each command's argv comes from the wasm splitter (as Redis's
 * `sdssplitargs`), only for commands whose first word names a refused one.
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
  let line = 1;
  let counted = 0; // text counted up to here for `line`
  for (let k = 0; k < snap.commands && hits.length < max; k++) {
    const from = snap.textFrom[k]!;
    const to = snap.textTo[k]!;
    const first = FIRST_WORD.exec(snap.inlineText.slice(from, Math.min(to, from + 64)))?.[1]?.toLowerCase();
    const entries = first === undefined ? undefined : byFirst.get(first);
    if (!entries) continue;
    let argv: string[];
    try {
      argv = (commandsOf(snap.inlineText.slice(from, to))[0] ?? []).map((a) => (asUtf8(a) ?? '').toLowerCase());
    } catch {
      continue;
    }
    const hit = entries.find((e) => e.words.length <= argv.length && e.words.every((w, i) => argv[i] === w));
    if (!hit) continue;
    for (; counted < from; counted++) if (snap.inlineText.charCodeAt(counted) === 10) line++;
    hits.push({ index: k, line, message: hit.message });
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
