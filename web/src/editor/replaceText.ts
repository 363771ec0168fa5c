// Writing a derived document into an editor view: only the part that
// differs is replaced, so that scroll position and cursor stay where they
// were when one view is re-derived from the other.
import type { Annotation, StateEffect } from '@codemirror/state';
import { EditorState } from '@codemirror/state';
import type { EditorView } from '@codemirror/view';

/** Replaces what differs between `view`'s text and `next` (one transaction, with `effects` and `annotation`). */
export function replaceText(view: EditorView, next: string, effects: StateEffect<unknown>[], annotation: Annotation<unknown>) {
  const sep = view.state.facet(EditorState.lineSeparator) ?? '\n';
  const prev = view.state.doc.sliceString(0, undefined, sep);
  let start = 0;
  const max = Math.min(prev.length, next.length);
  while (start < max && prev.charCodeAt(start) === next.charCodeAt(start)) start++;
  let end = 0;
  while (end < max - start && prev.charCodeAt(prev.length - 1 - end) === next.charCodeAt(next.length - 1 - end)) end++;
  if (sep.length === 2) {
    // Never cut a CR LF line break in half.
    if (start > 0 && prev.charCodeAt(start - 1) === 13) start--;
    if (end > 0 && prev.charCodeAt(prev.length - end) === 10 && prev.charCodeAt(prev.length - end - 1) === 13) end--;
  }
  // Document positions count a CR LF separator as one.
  const toPos = (idx: number) => {
    if (sep.length === 1) return idx;
    let breaks = 0;
    for (let i = prev.indexOf(sep); i >= 0 && i < idx; i = prev.indexOf(sep, i + sep.length)) breaks++;
    return idx - breaks * (sep.length - 1);
  };
  const changes = start === prev.length && start === next.length
    ? undefined
    : { from: toPos(start), to: toPos(prev.length - end), insert: view.state.toText(next.slice(start, next.length - end)) };
  view.dispatch({ changes, effects, annotations: annotation });
}
