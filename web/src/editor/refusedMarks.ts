// Which commands of the batch the server will refuse (GET /api/v1/info's
// `refused`, matched by playground/refused.ts), kept in each editor view's
// state so that decorations.ts marks their lines, as it marks the active
// command: the reader sees which line Run is waiting on.
import { StateEffect, StateField } from '@codemirror/state';

/** Command index (0-based) → why the server refuses it. */
export type RefusedMarks = ReadonlyMap<number, string>;

const NONE: RefusedMarks = new Map();

/** Replaces the marks (an empty map: none). */
export const setRefused = StateEffect.define<RefusedMarks>();

/**
 * The marks, by command index: kept through edits (a view whose text is
 * written later, when it comes into view, keeps them), replaced each time the
 * page checks the batch again after a change.
 */
export const refusedField = StateField.define<RefusedMarks>({
  create: () => NONE,
  update(value, tr) {
    for (const e of tr.effects) if (e.is(setRefused)) return e.value;
    return value;
  },
});
