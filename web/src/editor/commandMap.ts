// Where each command of the batch sits in one editor view, kept in the
// view's state so that decorations and cursor-following read it without
// another parse. Positions are CodeMirror offsets.
import { StateEffect, StateField } from '@codemirror/state';

/** Per command (index k): its range `from[k]..to[k]` in the view and its RESP size in bytes. */
export interface CommandMap {
  from: Uint32Array;
  to: Uint32Array;
  bytes: Uint32Array;
}

export const EMPTY_MAP: CommandMap = { from: new Uint32Array(0), to: new Uint32Array(0), bytes: new Uint32Array(0) };

/** Replaces the view's map (after a wasm pass). */
export const setMap = StateEffect.define<CommandMap>();
/** Marks command k as the one under the cursor (-1: none). */
export const setActive = StateEffect.define<number>();

export const mapField = StateField.define<CommandMap>({
  create: () => EMPTY_MAP,
  update(value, tr) {
    for (const e of tr.effects) if (e.is(setMap)) return e.value;
    if (!tr.docChanged || value.from.length === 0) return value;
    // Until the wasm pass re-derives the map (at once, or after a pause for
    // big documents), keep the old commands where the edit moved them.
    const from = value.from.map((p) => tr.changes.mapPos(p, 1));
    const to = value.to.map((p, k) => Math.max(tr.changes.mapPos(p, -1), from[k]));
    return { from, to, bytes: value.bytes };
  },
});

export const activeField = StateField.define<number>({
  create: () => -1,
  update(value, tr) {
    for (const e of tr.effects) if (e.is(setActive)) return e.value;
    return tr.docChanged ? -1 : value;
  },
});

/** First command whose end is after `pos` (binary search on sorted `to`). */
export function firstCommandAfter(map: CommandMap, pos: number): number {
  let lo = 0;
  let hi = map.to.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (map.to[mid] <= pos) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the command containing `pos`, or -1. */
export function commandAt(map: CommandMap, pos: number): number {
  const k = firstCommandAfter(map, pos);
  if (k < map.to.length && map.from[k] <= pos) return k;
  // The cursor at the very end of a command's text still belongs to it.
  if (k > 0 && map.to[k - 1] === pos) return k - 1;
  return -1;
}
