// Two CodeMirror 6 views of one batch: inline commands and their RESP bytes.
// Editing either one re-derives the other through the wasm module; nothing
// here splits arguments or parses RESP itself.
import { Annotation, EditorState, RangeSetBuilder, StateEffect, StateField, type Extension } from '@codemirror/state';
import {
  Decoration, EditorView, ViewPlugin, WidgetType, drawSelection, highlightActiveLine, highlightSpecialChars,
  keymap, lineNumbers, type DecorationSet, type ViewUpdate,
} from '@codemirror/view';
import { defaultKeymap, history, historyKeymap } from '@codemirror/commands';
import { setDiagnostics, type Diagnostic } from '@codemirror/lint';
import { inlineToResp, respToInline } from '../wasm.js';
import { bytesToPositions, bytesToView, viewToBytes } from './respText.js';

/** Where each command sits in one view; positions are CodeMirror offsets. */
export interface CommandMap {
  from: Uint32Array;
  to: Uint32Array;
  bytes: Uint32Array; // RESP bytes of each command
}

const EMPTY_MAP: CommandMap = { from: new Uint32Array(0), to: new Uint32Array(0), bytes: new Uint32Array(0) };
const fromSync = Annotation.define<boolean>();
const setMap = StateEffect.define<CommandMap>();
const setActive = StateEffect.define<number>();

const mapField = StateField.define<CommandMap>({
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

const activeField = StateField.define<number>({
  create: () => -1,
  update(value, tr) {
    for (const e of tr.effects) if (e.is(setActive)) return e.value;
    return tr.docChanged ? -1 : value;
  },
});

class TextWidget extends WidgetType {
  constructor(readonly text: string, readonly cls: string, readonly title = '') {
    super();
  }
  eq(other: TextWidget) {
    return other.text === this.text && other.cls === this.cls && other.title === this.title;
  }
  toDOM() {
    const span = document.createElement('span');
    span.className = this.cls;
    span.textContent = this.text;
    if (this.title) span.title = this.title;
    span.setAttribute('aria-hidden', 'true');
    return span;
  }
  ignoreEvent() {
    return true;
  }
}

const CRLF = Decoration.widget({ widget: new TextWidget('\\r\\n', 'cm-crlf', 'CR LF: 2 bytes'), side: 1 });
const activeLine = Decoration.line({ class: 'cm-activeCommand' });

/** First command whose end is after `pos` (binary search on sorted `to`). */
function firstCommandAfter(map: CommandMap, pos: number): number {
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

/** Byte counts per command, CR LF markers and the active command, for the visible lines only (stays fast at 100 000 commands). */
function decorationsPlugin(showCrlf: boolean) {
  const build = (view: EditorView): DecorationSet => {
    const { doc } = view.state;
    const map = view.state.field(mapField);
    const active = view.state.field(activeField);
    const marks: { pos: number; deco: Decoration }[] = [];
    let crlfDone = 0; // last line marked: visible ranges may share a line
    let cmdDone = 0; // first command not yet decorated
    for (const { from, to } of view.visibleRanges) {
      if (showCrlf) {
        for (let line = doc.lineAt(from); ; line = doc.line(line.number + 1)) {
          if (line.number < doc.lines && line.number > crlfDone) marks.push({ pos: line.to, deco: CRLF });
          crlfDone = Math.max(crlfDone, line.number);
          if (line.to >= to || line.number >= doc.lines) break;
        }
      }
      for (let k = Math.max(cmdDone, firstCommandAfter(map, from)); k < map.from.length && map.from[k] <= to && map.to[k] <= doc.length; k++, cmdDone = k) {
        const last = doc.lineAt(Math.max(map.from[k], map.to[k] - (showCrlf ? 1 : 0)));
        const n = map.bytes[k];
        marks.push({
          pos: last.to,
          deco: Decoration.widget({
            widget: new TextWidget(`${n} B`, 'cm-bytes', `command ${k + 1}: ${n} bytes of RESP`),
            side: 2,
          }),
        });
        if (k === active) {
          const first = doc.lineAt(map.from[k]).number;
          for (let l = first; l <= last.number; l++) marks.push({ pos: doc.line(l).from, deco: activeLine });
        }
      }
    }
    // Line decorations first at a position, then widgets by side.
    marks.sort((a, b) => a.pos - b.pos || a.deco.startSide - b.deco.startSide);
    const builder = new RangeSetBuilder<Decoration>();
    for (const m of marks) builder.add(m.pos, m.pos, m.deco);
    return builder.finish();
  };
  return ViewPlugin.fromClass(
    class {
      decorations: DecorationSet;
      constructor(view: EditorView) {
        this.decorations = build(view);
      }
      update(u: ViewUpdate) {
        const relevant = u.docChanged || u.viewportChanged || u.transactions.some((t) => t.effects.length > 0);
        if (relevant) this.decorations = build(u.view);
      }
    },
    { decorations: (v) => v.decorations },
  );
}

export interface BatchSnapshot {
  inlineText: string;
  commands: number;
  inlineErrors: number;
  respError: string | null;
  respBytes: number;
  /** Inline text of command i: inlineText.slice(textFrom[i], textTo[i]). */
  textFrom: Uint32Array;
  textTo: Uint32Array;
}

export interface Editors {
  inline: EditorView;
  resp: EditorView;
  /** The batch as the inline view holds it now. */
  snapshot(): BatchSnapshot;
  setInline(text: string): void;
  /** Calls `listener` each time the batch changes (either view edited, or
   * `setInline`), after `snapshot()` reflects the change. */
  onChange(listener: () => void): void;
}

/** Large documents are re-derived after a pause instead of on every key. */
const DEBOUNCE_CHARS = 200_000;

export function createEditors(opts: {
  inlineParent: HTMLElement;
  respParent: HTMLElement;
  inlineStatus: HTMLElement;
  respStatus: HTMLElement;
  initial: string;
  extraKeys: Extension;
}): Editors {
  let lastSnapshot: BatchSnapshot = {
    inlineText: '', commands: 0, inlineErrors: 0, respError: null, respBytes: 0,
    textFrom: new Uint32Array(0), textTo: new Uint32Array(0),
  };

  const common = (label: string): Extension[] => [
    lineNumbers(),
    history(),
    drawSelection(),
    highlightActiveLine(),
    EditorView.lineWrapping,
    keymap.of([...defaultKeymap, ...historyKeymap]),
    opts.extraKeys,
    mapField,
    activeField,
    EditorView.contentAttributes.of({ 'aria-label': label }),
  ];

  let timer: ReturnType<typeof setTimeout> | undefined;
  let pending: (() => void) | null = null;
  const flush = () => {
    clearTimeout(timer);
    const fn = pending;
    pending = null;
    fn?.();
  };
  const schedule = (fn: () => void, size: number) => {
    pending = fn;
    if (size > DEBOUNCE_CHARS) {
      clearTimeout(timer);
      timer = setTimeout(flush, 150);
    } else flush();
  };

  const inline = new EditorView({
    parent: opts.inlineParent,
    state: EditorState.create({
      doc: opts.initial,
      extensions: [
        common('Inline commands, one per line'),
        highlightSpecialChars(),
        decorationsPlugin(false),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !u.transactions.some((t) => t.annotation(fromSync))) {
            schedule(fromInline, u.state.doc.length);
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
        highlightSpecialChars({
          addSpecialChars: /[\udc80-\udcff]/,
          render: (code) => {
            const span = document.createElement('span');
            span.className = 'cm-rawByte';
            span.textContent = code === 10 ? '\\n' : code === 13 ? '\\r' : code >= 0xdc80 && code <= 0xdcff
              ? '\\x' + (code - 0xdc00).toString(16) : '\\x' + code.toString(16).padStart(2, '0');
            span.title = code >= 0xdc80 && code <= 0xdcff ? 'byte that is not UTF-8' : 'control character';
            return span;
          },
        }),
        decorationsPlugin(true),
        EditorView.updateListener.of((u) => {
          if (u.docChanged && !u.transactions.some((t) => t.annotation(fromSync))) {
            schedule(fromResp, u.state.doc.length);
          }
          if (u.selectionSet && u.view.hasFocus) follow(resp, inline);
        }),
      ],
    }),
  });

  /** Highlights the command under the cursor in both views. */
  function follow(src: EditorView, dst: EditorView) {
    const k = commandAt(src.state.field(mapField), src.state.selection.main.head);
    const dstMap = dst.state.field(mapField);
    src.dispatch({ effects: setActive.of(k) });
    const effects: StateEffect<unknown>[] = [setActive.of(k)];
    if (k >= 0 && k < dstMap.from.length) effects.push(EditorView.scrollIntoView(dstMap.from[k], { y: 'nearest' }));
    dst.dispatch({ effects });
  }

  /** Replaces only the part of `view`'s text that differs, keeping scroll and cursor stable. */
  function replaceText(view: EditorView, next: string, effects: StateEffect<unknown>[]) {
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
    const toPos = (idx: number) => {
      if (sep.length === 1) return idx;
      let breaks = 0;
      for (let i = prev.indexOf(sep); i >= 0 && i < idx; i = prev.indexOf(sep, i + sep.length)) breaks++;
      return idx - breaks * (sep.length - 1);
    };
    const changes = start === prev.length && start === next.length
      ? undefined
      : { from: toPos(start), to: toPos(prev.length - end), insert: view.state.toText(next.slice(start, next.length - end)) };
    view.dispatch({ changes, effects, annotations: fromSync.of(true) });
  }

  function respMap(respText: string, starts: ArrayLike<number>, ends: ArrayLike<number>): CommandMap {
    const n = starts.length;
    const offsets = new Uint32Array(n * 2);
    const bytes = new Uint32Array(n);
    for (let k = 0; k < n; k++) {
      offsets[2 * k] = starts[k];
      offsets[2 * k + 1] = ends[k];
      bytes[k] = ends[k] - starts[k];
    }
    const pos = bytesToPositions(respText, offsets);
    const from = new Uint32Array(n);
    const to = new Uint32Array(n);
    for (let k = 0; k < n; k++) {
      from[k] = pos[2 * k];
      to[k] = pos[2 * k + 1];
    }
    return { from, to, bytes };
  }

  function fromInline() {
    const text = inline.state.doc.toString();
    const r = inlineToResp(text);
    const n = r.commands;
    const textFrom = new Uint32Array(n);
    const textTo = new Uint32Array(n);
    const respStart = new Uint32Array(n);
    const respEnd = new Uint32Array(n);
    for (let k = 0; k < n; k++) {
      textFrom[k] = r.spans[5 * k + 1];
      textTo[k] = r.spans[5 * k + 2];
      respStart[k] = r.spans[5 * k + 3];
      respEnd[k] = r.spans[5 * k + 4];
    }
    const respText = bytesToView(r.resp);
    const rmap = respMap(respText, respStart, respEnd);
    replaceText(resp, respText, [setMap.of(rmap)]);
    resp.dispatch(setDiagnostics(resp.state, []));
    const imap: CommandMap = { from: textFrom, to: textTo, bytes: rmap.bytes };
    const diagnostics: Diagnostic[] = r.errors.map((e) => {
      const line = inline.state.doc.lineAt(Math.min(e.pos, inline.state.doc.length));
      return {
        from: e.pos,
        to: Math.min(Math.max(e.pos + 1, e.pos), line.to),
        severity: 'error',
        message: `line ${e.line}, column ${e.column}: ${e.message}`,
      };
    });
    inline.dispatch({ effects: setMap.of(imap) });
    inline.dispatch(setDiagnostics(inline.state, diagnostics));
    lastSnapshot = {
      inlineText: text, commands: n, inlineErrors: r.errors.length, respError: null, respBytes: r.resp.length,
      textFrom, textTo,
    };
    renderStatus(r.errors.map((e) => `line ${e.line}, column ${e.column}: ${e.message}`), null);
  }

  function fromResp() {
    const respText = resp.state.doc.sliceString(0, undefined, '\r\n');
    const bytes = viewToBytes(respText);
    const r = respToInline(bytes);
    const n = r.commands;
    const respStart = new Uint32Array(n);
    const respEnd = new Uint32Array(n);
    const textFrom = new Uint32Array(n);
    const textTo = new Uint32Array(n);
    for (let k = 0; k < n; k++) {
      respStart[k] = r.spans[4 * k];
      respEnd[k] = r.spans[4 * k + 1];
      textFrom[k] = r.spans[4 * k + 2];
      textTo[k] = r.spans[4 * k + 3];
    }
    const rmap = respMap(respText, respStart, respEnd);
    resp.dispatch({ effects: setMap.of(rmap) });
    if (r.error) {
      // Keep the inline view as it was until the RESP parses again.
      const [pos] = bytesToPositions(respText, [r.error.offset]);
      const line = resp.state.doc.lineAt(Math.min(pos, resp.state.doc.length));
      const where = r.error.column === undefined ? `line ${r.error.line}` : `line ${r.error.line}, column ${r.error.column}`;
      const message = `byte ${r.error.offset} (${where}): ${r.error.message}`;
      resp.dispatch(setDiagnostics(resp.state, [
        { from: pos, to: Math.min(pos + 1, line.to), severity: 'error', message },
      ]));
      lastSnapshot = { ...lastSnapshot, respError: message };
      renderStatus([], message);
      return;
    }
    resp.dispatch(setDiagnostics(resp.state, []));
    const text = r.text.endsWith('\n') ? r.text.slice(0, -1) : r.text;
    replaceText(inline, text, [setMap.of({ from: textFrom, to: textTo, bytes: rmap.bytes })]);
    inline.dispatch(setDiagnostics(inline.state, []));
    lastSnapshot = {
      inlineText: text, commands: n, inlineErrors: 0, respError: null, respBytes: bytes.length, textFrom, textTo,
    };
    renderStatus([], null);
  }

  const listeners: Array<() => void> = [];

  function renderStatus(inlineErrors: string[], respError: string | null) {
    renderStatusText(inlineErrors, respError);
    for (const l of listeners) l();
  }

  function renderStatusText(inlineErrors: string[], respError: string | null) {
    const s = lastSnapshot;
    const plural = (n: number, w: string) => `${n.toLocaleString('en-US')} ${w}${n === 1 ? '' : 's'}`;
    opts.inlineStatus.replaceChildren();
    const summary = document.createElement('span');
    summary.textContent = `${plural(s.commands, 'command')}${inlineErrors.length ? ` · ${plural(inlineErrors.length, 'error')}` : ''}`;
    opts.inlineStatus.append(summary);
    for (const msg of inlineErrors.slice(0, 5)) {
      const e = document.createElement('div');
      e.className = 'error-message';
      e.textContent = msg;
      opts.inlineStatus.append(e);
    }
    opts.respStatus.replaceChildren();
    const total = document.createElement('span');
    total.className = 'resp-total';
    total.textContent = `${plural(s.commands, 'command')} · ${plural(s.respBytes, 'byte')} in total`;
    opts.respStatus.append(total);
    if (respError) {
      const e = document.createElement('div');
      e.className = 'error-message';
      e.textContent = respError;
      opts.respStatus.append(e);
    }
  }

  fromInline();

  return {
    inline,
    resp,
    snapshot: () => {
      flush();
      return lastSnapshot;
    },
    setInline(text: string) {
      inline.dispatch({ changes: { from: 0, to: inline.state.doc.length, insert: text } });
      flush();
    },
    onChange(listener: () => void) {
      listeners.push(listener);
    },
  };
}
