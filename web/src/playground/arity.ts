// The batch's commands with the wrong number of arguments by the server's
// own arity (GET /api/v1/commands), caught before Run: marked in the editors
// and said above Run, as the refused commands are (./refused.ts), but Run
// stays on: a lesson may send one on purpose (a command rejected while
// queueing makes EXEC answer EXECABORT). `INCR` alone is flagged here, not
// only by Redis after a round trip.
import type { BatchSnapshot } from '../editor/snapshot.js';
import { arityProblem, type CommandBook } from '../editor/commandHelp.js';
import { asUtf8 } from '../export/bytes.js';
import { commandsOf } from '../export/fromText.js';
import { MAX_MARKED, type RefusedHit } from './refused.js';

/** Batches larger than this are left to the server: splitting them all would slow every keystroke. */
export const MAX_CHECKED = 5_000;

/** A command's words: a plain line split at spaces, anything quoted or escaped by the wasm splitter (as Redis splits it). */
function words(text: string): string[] {
  if (!/["'\\]/.test(text)) return text.split(/[ \t]+/).filter((w) => w !== '' && w !== '\r');
  return (commandsOf(text)[0] ?? []).map((a) => asUtf8(a) ?? '');
}

/** The commands of `snap` whose word count the server's arity refuses, in order, at most `max`. */
export function arityIn(book: CommandBook, snap: BatchSnapshot, max = MAX_MARKED): RefusedHit[] {
  if (book.size === 0 || snap.inlineErrors > 0 || snap.respError || snap.commands > MAX_CHECKED) return [];
  const hits: RefusedHit[] = [];
  let line = 1;
  let counted = 0;
  for (let k = 0; k < snap.commands && hits.length < max; k++) {
    let argv: string[];
    try {
      argv = words(snap.inlineText.slice(snap.textFrom[k]!, snap.textTo[k]!).trim());
    } catch {
      continue;
    }
    const problem = arityProblem(book, argv);
    if (!problem) continue;
    const from = snap.textFrom[k] ?? 0;
    for (; counted < from; counted++) if (snap.inlineText.charCodeAt(counted) === 10) line++;
    hits.push({ index: k, line, message: problem });
  }
  return hits;
}

/** The warning above Run for `hits` (none: null). */
export function arityWarning(hits: RefusedHit[]): string | null {
  const h = hits[0];
  if (!h) return null;
  const more = hits.length > 1 ? ` (${hits.length} commands of this batch, marked in the editor)` : '';
  return `Command ${h.index + 1} (line ${h.line}): ${h.message}${more}.`;
}
