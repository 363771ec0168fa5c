// Decorations of an editor view, for its visible lines only (fast at
// 100,000 commands): each command's size in RESP bytes, CR LF markers in the
// RESP view, the lines of the command under the cursor and of the commands
// the server will refuse (refusedMarks.ts).
import { RangeSetBuilder } from '@codemirror/state';
import { Decoration, EditorView, ViewPlugin, WidgetType, type DecorationSet, type ViewUpdate } from '@codemirror/view';
import { activeField, firstCommandAfter, mapField } from './commandMap.js';
import { refusedField } from './refusedMarks.js';

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
const refusedLine = Decoration.line({ class: 'cm-refusedCommand' });

/** Byte counts per command, CR LF markers (`showCrlf`) and the active command. */
export function decorationsPlugin(showCrlf: boolean) {
  const build = (view: EditorView): DecorationSet => {
    const { doc } = view.state;
    const map = view.state.field(mapField);
    const active = view.state.field(activeField);
    const refused = view.state.field(refusedField, false);
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
        const why = refused?.get(k);
        if (why !== undefined) {
          marks.push({ pos: last.to, deco: Decoration.widget({ widget: new TextWidget('refused', 'cm-refused', `command ${k + 1}: ${why}`), side: 3 }) });
        }
        for (const [on, deco] of [[k === active, activeLine], [why !== undefined, refusedLine]] as const) {
          if (!on) continue;
          const first = doc.lineAt(map.from[k]).number;
          for (let l = first; l <= last.number; l++) marks.push({ pos: doc.line(l).from, deco });
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
