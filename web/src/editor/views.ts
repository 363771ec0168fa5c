// Two CodeMirror 6 views of one batch: inline commands and their RESP bytes.
// Editing either one re-derives the other through the wasm module; nothing
// here splits arguments or parses RESP itself. The pieces: where commands
// are (commandMap.ts), their decorations (decorations.ts), writing a derived
// text (replaceText.ts), the status lines (status.ts).
import { Annotation, EditorState, type Extension } from '@codemirror/state';
import { EditorView, drawSelection, highlightActiveLine, highlightSpecialChars, keymap, lineNumbers } from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { setDiagnostics, type Diagnostic } from '@codemirror/lint';
import { inlineToResp, respToInline, type CommandSpans, type InlineToResp } from '../wasm.js';
import { activeField, commandAt, mapField, setActive, setMap, type CommandMap } from './commandMap.js';
import { decorationsPlugin } from './decorations.js';
import { refusedField, setRefused, type RefusedMarks } from './refusedMarks.js';
import { replaceText } from './replaceText.js';
import { bytesToView, viewToBytes } from './respText.js';
import type { BatchSnapshot } from './snapshot.js';
import { renderStatus } from './status.js';

export { commandAt, type CommandMap } from './commandMap.js';

export interface Editors {
  inline: EditorView;
  resp: EditorView;
  /** The batch as the inline view holds it now (or will hold it when shown, see `setInline`). */
  snapshot(): BatchSnapshot;
  /** Replaces the batch. While the editors are hidden, only the snapshot changes at once; the views are written when they are shown. */
  setInline(text: string): void;
  /** Calls `listener` each time the batch changes (either view edited, or
   * `setInline`), after `snapshot()` reflects the change. */
  onChange(listener: () => void): void;
  /** Marks the commands (by index) the server will refuse, with why, in both views; an empty map takes the marks away. */
  markRefused(marks: RefusedMarks): void;
}

/** Large documents are re-derived after a pause instead of on every key. */
const DEBOUNCE_CHARS = 200_000;

/** Marks a transaction that writes a derived text (it must not re-derive the other view). */
const fromSync = Annotation.define<boolean>();

/**
 * Writes derived text into one view when CodeMirror can see that view.
 *
 * CodeMirror cannot measure a view that is hidden (display: none, as in
 * another tab) or scrolled out of the window, and a document replaced there
 * is rendered whole: `viewportIsAppropriate` accepts any viewport when the
 * view is not in view, so its last viewport maps onto the entire new text.
 * 20,000 commands became 90,000 DOM lines, laid out when the tab was shown:
 * a page frozen for 20 s. So a write to a view that is not in
 * view waits until it is (the latest write wins); the batch's snapshot is
 * up to date at once all the same.
 */
class ViewWriter {
  private pending: (() => void) | null = null;
  /** Set once the view exists (its extensions need `listener()` first). */
  view: EditorView | null = null;

  /** Runs `write` now if the view is in view, else when it comes into view. */
  write(write: () => void) {
    this.pending = write;
    this.flush();
  }

  /** Runs the waiting write, if any and the view is in view. */
  flush() {
    if (!this.pending || !this.view?.inView) return;
    const write = this.pending;
    this.pending = null;
    write();
  }

  /** An update listener that flushes once the view comes into view (after the update: no dispatch inside one). */
  listener(): Extension {
    return EditorView.updateListener.of((u) => {
      if (this.pending && u.view.inView && (u.geometryChanged || u.viewportChanged || u.heightChanged)) setTimeout(() => this.flush(), 0);
    });
  }
}

/** RESP size of each command, in bytes. */
function respSizes(s: CommandSpans): Uint32Array {
  const n = s.respStart.length;
  const bytes = new Uint32Array(n);
  for (let k = 0; k < n; k++) bytes[k] = s.respEnd[k] - s.respStart[k];
  return bytes;
}

/** Re-deriving the other view: at once for a small document, after a pause for a large one (the latest change wins). */
class Debounced {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pending: (() => void) | null = null;

  schedule(fn: () => void, size: number) {
    this.pending = fn;
    if (size > DEBOUNCE_CHARS) {
      clearTimeout(this.timer);
      this.timer = setTimeout(() => this.flush(), 150);
    } else this.flush();
  }

  /** Runs what waits, now. */
  flush() {
    clearTimeout(this.timer);
    const fn = this.pending;
    this.pending = null;
    fn?.();
  }

  cancel() {
    this.pending = null;
    clearTimeout(this.timer);
  }
}

/** What both views have: editing, history, the command map and its marks, a label. */
function commonExtensions(label: string, extraKeys: Extension): Extension[] {
  return [
    lineNumbers(),
    history(),
    drawSelection(),
    highlightActiveLine(),
    EditorView.lineWrapping,
    keymap.of([...defaultKeymap, ...historyKeymap]),
    extraKeys,
    mapField,
    activeField,
    refusedField,
    // tabindex says outright what contenteditable already makes true (the
    // text is reachable by keyboard), for checkers that look for it on a
    // scrolled region.
    EditorView.contentAttributes.of({ 'aria-label': label, tabindex: '0' }),
  ];
}

/** The RESP view shows CR and LF, control characters and bytes that are not UTF-8 as escapes. */
const rawBytes = highlightSpecialChars({
  addSpecialChars: /[\udc80-\udcff]/,
  render: (code) => {
    const span = document.createElement('span');
    span.className = 'cm-rawByte';
    span.textContent = code === 10 ? '\\n' : code === 13 ? '\\r' : code >= 0xdc80 && code <= 0xdcff
      ? '\\x' + (code - 0xdc00).toString(16) : '\\x' + code.toString(16).padStart(2, '0');
    span.title = code >= 0xdc80 && code <= 0xdcff ? 'byte that is not UTF-8' : 'control character';
    return span;
  },
});

/** Where and why the RESP view's text does not parse; `typed`: the same text with its `\\r\\n` escapes made line breaks, if it has any. */
function respErrorMessage(error: NonNullable<ReturnType<typeof respToInline>['error']>, typed: { error?: string } | null, hasLineBreak: boolean): string {
  if (typed) {
    // Escaped text that does not parse even unescaped: its own error.
    return `in the text with each \\r\\n made a line break: ${typed.error}`;
  }
  const where = error.column === undefined ? `line ${error.line}` : `line ${error.line}, column ${error.column}`;
  const message = `byte ${error.offset} (${where}): ${error.message}`;
  if (/incomplete/.test(error.message) && !hasLineBreak) {
    return message + ' — end each part with a line break (Enter), or paste escaped text with \\r\\n between the parts';
  }
  return message;
}

export function createEditors(opts: {
  inlineParent: HTMLElement;
  respParent: HTMLElement;
  inlineStatus: HTMLElement;
  respStatus: HTMLElement;
  initial: string;
  extraKeys: Extension;
  /** The inline editor's help: completion and hover from the server's commands (./commandHelp.ts). */
  help?: Extension;
}): Editors {
  let lastSnapshot: BatchSnapshot = {
    inlineText: '', commands: 0, inlineErrors: 0, respError: null, respBytes: 0,
    textFrom: new Uint32Array(0), textTo: new Uint32Array(0),
  };
  const listeners: Array<() => void> = [];

  // The last inline parse, so that a batch parsed for its snapshot is not parsed again to fill the views.
  let parsed: { text: string; r: InlineToResp } | null = null;
  const parseInline = (text: string) => (parsed?.text === text ? parsed.r : (parsed = { text, r: inlineToResp(text) }).r);

  const derive = new Debounced();
  const common = (label: string) => commonExtensions(label, opts.extraKeys);

  const inlineWriter = new ViewWriter();
  const respWriter = new ViewWriter();

  const inline = new EditorView({
    parent: opts.inlineParent,
    state: EditorState.create({
      doc: opts.initial,
      extensions: [
        common('Inline commands, one per line'),
        opts.help ?? [],
        highlightSpecialChars(),
        decorationsPlugin(false),
        inlineWriter.listener(),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !u.transactions.some((t) => t.annotation(fromSync))) {
            derive.schedule(() => fromInline(inline.state.doc.toString()), u.state.doc.length);
          }
          if (u.selectionSet && u.view.hasFocus) follow(inline, resp);
        }),
      ],
    }),
  });

  const resp = new EditorView({
    parent: opts.respParent,
    state: EditorState.create({
      doc: '',
      extensions: [
        common('RESP bytes; each line ends with CR LF'),
        EditorState.lineSeparator.of('\r\n'),
        rawBytes,
        decorationsPlugin(true),
        respWriter.listener(),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !u.transactions.some((t) => t.annotation(fromSync))) {
            derive.schedule(fromResp, u.state.doc.length);
          }
          if (u.selectionSet && u.view.hasFocus) follow(resp, inline);
        }),
      ],
    }),
  });
  inlineWriter.view = inline;
  respWriter.view = resp;

  /** Highlights the command under the cursor in both views. */
  function follow(src: EditorView, dst: EditorView) {
    const k = commandAt(src.state.field(mapField), src.state.selection.main.head);
    const dstMap = dst.state.field(mapField);
    src.dispatch({ effects: setActive.of(k) });
    const effects = [setActive.of(k)];
    if (k >= 0 && k < dstMap.from.length) dst.dispatch({ effects: [...effects, EditorView.scrollIntoView(dstMap.from[k], { y: 'nearest' })] });
    else dst.dispatch({ effects });
  }

  const inlineMessages = (r: InlineToResp) => r.errors.map((e) => `line ${e.line}, column ${e.column}: ${e.message}`);

  /** The inline view's command map and diagnostics for `r`, as one transaction with `changes` (if any) that make its text `r`'s. */
  function markInline(r: InlineToResp, bytes: Uint32Array, changes?: { from: number; to: number; insert: string }) {
    // The map goes in the same transaction as the text: mapped through a
    // replacement of the whole text, the old map would put every old
    // command at the new text's end (10,000 widgets drawn).
    const messages = inlineMessages(r);
    const length = changes ? changes.insert.length : inline.state.doc.length;
    const diagnostics: Diagnostic[] = r.errors.map((e, i) => {
      const pos = Math.min(e.pos, length);
      return { from: pos, to: Math.min(pos + 1, length), severity: 'error', message: messages[i] };
    });
    // The diagnostics effect is read against the transaction's new state.
    const lint = setDiagnostics(inline.state, diagnostics).effects ?? [];
    inline.dispatch({ changes, effects: [setMap.of({ from: r.textStart, to: r.textEnd, bytes }), ...(Array.isArray(lint) ? lint : [lint])], annotations: fromSync.of(true) });
  }

  /** The inline batch `text` is the batch now: snapshot and status at once, the RESP view (and the inline view unless it holds `text` already) when in view. */
  function fromInline(text: string, writeInline = false) {
    const r = parseInline(text);
    const bytes = respSizes(r);
    if (writeInline) {
      inlineWriter.write(() => markInline(r, bytes, { from: 0, to: inline.state.doc.length, insert: text }));
    } else markInline(r, bytes);
    respWriter.write(() => {
      replaceText(resp, bytesToView(r.resp), [setMap.of({ from: r.viewStart, to: r.viewEnd, bytes })], fromSync.of(true));
      resp.dispatch(setDiagnostics(resp.state, []));
    });
    lastSnapshot = {
      inlineText: text, commands: r.commands, inlineErrors: r.errors.length, respError: null, respBytes: r.resp.length,
      textFrom: r.textStart, textTo: r.textEnd,
    };
    changed(inlineMessages(r));
  }

  /** The RESP view changed: the inline view follows, unless the RESP does not parse (then it says where). */
  function fromResp() {
    const bytes = viewToBytes(resp.state.doc.sliceString(0, undefined, '\r\n'));
    const r = respToInline(bytes);
    const sizes = respSizes(r);
    resp.dispatch({ effects: setMap.of({ from: r.viewStart, to: r.viewEnd, bytes: sizes }) });
    if (r.error) {
      // RESP typed or pasted the way this view shows it, `\r\n` as four
      // characters: take it, the escapes made real line breaks.
      const typed = escapedCrlf(resp.state.doc.sliceString(0, undefined, '\r\n'));
      if (typed?.ok) {
        resp.dispatch({ changes: { from: 0, to: resp.state.doc.length, insert: typed.text } });
        return fromResp();
      }
      // Keep the inline view as it was until the RESP parses again.
      const pos = Math.min(r.error.pos, resp.state.doc.length);
      const message = respErrorMessage(r.error, typed, resp.state.doc.sliceString(0).includes('\n'));
      resp.dispatch(setDiagnostics(resp.state, [{ from: pos, to: Math.min(pos + 1, resp.state.doc.lineAt(pos).to), severity: 'error', message }]));
      lastSnapshot = { ...lastSnapshot, respError: message };
      changed([]);
      return;
    }
    resp.dispatch(setDiagnostics(resp.state, []));
    const text = r.text.endsWith('\n') ? r.text.slice(0, -1) : r.text;
    inlineWriter.write(() => {
      replaceText(inline, text, [setMap.of({ from: r.textStart, to: r.textEnd, bytes: sizes })], fromSync.of(true));
      inline.dispatch(setDiagnostics(inline.state, []));
    });
    lastSnapshot = {
      inlineText: text, commands: r.commands, inlineErrors: 0, respError: null, respBytes: bytes.length,
      textFrom: r.textStart, textTo: r.textEnd,
    };
    changed([]);
  }

  function changed(inlineErrors: string[]) {
    renderStatus(opts.inlineStatus, opts.respStatus, lastSnapshot, inlineErrors);
    for (const l of listeners) l();
  }

  fromInline(inline.state.doc.toString());

  return {
    inline,
    resp,
    snapshot: () => {
      derive.flush();
      return lastSnapshot;
    },
    setInline(text: string) {
      derive.cancel();
      fromInline(text, true);
    },
    onChange(listener: () => void) {
      listeners.push(listener);
    },
    markRefused(marks: RefusedMarks) {
      // Only a change is dispatched: every edit asks again.
      for (const v of [inline, resp]) {
        const now = v.state.field(refusedField);
        if (now.size === 0 && marks.size === 0) continue;
        v.dispatch({ effects: setRefused.of(marks) });
      }
    },
  };
}

/**
 * `text` with its literal `\r\n` escapes (backslash r backslash n, as this
 * view displays line ends) turned into real CR LF: `ok` if that makes RESP
 * that parses, else the error it then has; null if there is no escape.
 */
export function escapedCrlf(text: string): { ok: true; text: string } | { ok: false; error: string } | null {
  if (!text.includes('\\r\\n')) return null;
  const real = text.replace(/\\r\\n/g, '\r\n');
  const e = respToInline(viewToBytes(real)).error;
  return e ? { ok: false, error: `byte ${e.offset}: ${e.message}` } : { ok: true, text: real };
}
