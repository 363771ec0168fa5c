// The editor knows Redis from the server itself (GET /api/v1/commands: its
// COMMAND DOCS and command table): command names complete as they are
// typed, with their syntax and summary; hovering a command's name shows its
// syntax, summary and arity; and a command with the wrong number of
// arguments is caught before Run, as Redis would refuse it ("ERR wrong
// number of arguments"), instead of after.
import { autocompletion, type Completion, type CompletionContext, type CompletionResult } from '@codemirror/autocomplete';
import type { Extension } from '@codemirror/state';
import { hoverTooltip } from '@codemirror/view';
import type { CommandDoc } from '../api/client.js';

/** The server's commands by upper-case name (`SET`, `CLIENT KILL`); empty until loaded. */
export class CommandBook {
  private byName = new Map<string, CommandDoc>();

  load(commands: CommandDoc[]) {
    this.byName = new Map(commands.map((c) => [c.name.toUpperCase(), c]));
  }

  get size(): number {
    return this.byName.size;
  }

  /** The entry for an argv's first words: `CLIENT KILL` for a container's subcommand, else the command. */
  lookup(argv: string[]): CommandDoc | undefined {
    const name = (argv[0] ?? '').toUpperCase();
    const top = this.byName.get(name);
    if (top?.container && argv.length > 1) return this.byName.get(`${name} ${argv[1]!.toUpperCase()}`) ?? top;
    return top;
  }

  /** Entries whose name starts with `prefix` (case-insensitive); subcommands only when asked for by their container's name. */
  complete(prefix: string): CommandDoc[] {
    const p = prefix.toUpperCase();
    const sub = p.includes(' ');
    return [...this.byName.values()].filter((c) => c.name.startsWith(p) && c.name.includes(' ') === sub);
  }
}

/** What is wrong with `argv`'s number of words by the server's arity, or null (fine, or a command the book does not know). */
export function arityProblem(book: CommandBook, argv: string[]): string | null {
  const doc = book.lookup(argv);
  if (!doc || doc.container) return null;
  const a = doc.arity;
  const n = argv.length;
  if (a > 0 ? n === a : n >= -a) return null;
  // Redis counts the name (and a subcommand's name) among the words.
  const words = doc.name.split(' ').length;
  const need = Math.max(0, Math.abs(a) - words);
  const want = `${a > 0 ? 'exactly' : 'at least'} ${need} argument${need === 1 ? '' : 's'}`;
  return `${doc.name} takes ${want} after its name${words > 1 ? 's' : ''} (${doc.syntax}), this one has ${Math.max(0, n - words)}: Redis would answer "ERR wrong number of arguments"`;
}

/** The help shown for a command: its syntax line, summary, and where it comes from. */
export function helpText(doc: CommandDoc): string {
  const facts = [doc.group && `group ${doc.group}`, doc.since && `since ${doc.since}`, doc.complexity && `complexity ${doc.complexity}`].filter(Boolean).join(' · ');
  return [doc.syntax, doc.summary, facts].filter(Boolean).join('\n');
}

/** The first word of `line` (and a second one after a container), with their offsets in the line. */
function head(text: string): { from: number; to: number; word: string } | null {
  const m = /^(\s*)([A-Za-z][A-Za-z0-9_-]*)/.exec(text);
  return m ? { from: m[1]!.length, to: m[1]!.length + m[2]!.length, word: m[2]! } : null;
}

/**
 * Completion, hover and nothing else: the arity check runs with the page's
 * other pre-Run checks. `defaultKeymap: false` leaves the completion list's
 * keys to the caller (the console, where Enter sends the line).
 */
export function commandHelp(book: CommandBook, opts: { defaultKeymap?: boolean } = {}): Extension[] {
  const source = (ctx: CompletionContext): CompletionResult | null => {
    if (book.size === 0) return null;
    const line = ctx.state.doc.lineAt(ctx.pos);
    const before = line.text.slice(0, ctx.pos - line.from);
    // A command's name (the line's first word), or a container's subcommand after it.
    const m = /^(\s*)([A-Za-z][A-Za-z0-9_-]*)(?:\s+([A-Za-z][A-Za-z0-9_-]*)?)?$/.exec(before);
    if (!m) return null;
    const [, lead, first, second] = m;
    const inSub = before.length > lead!.length + first!.length;
    if (!inSub && first!.length === 0 && !ctx.explicit) return null;
    const prefix = inSub ? `${first} ${second ?? ''}` : first!;
    if (inSub && !book.lookup([first!])?.container) return null;
    const from = inSub ? ctx.pos - (second ?? '').length : line.from + lead!.length;
    const options: Completion[] = book.complete(prefix).map((c) => ({
      label: inSub ? c.name.split(' ')[1]! : c.name,
      detail: c.syntax.slice(c.name.length).trim().slice(0, 60),
      info: helpText(c),
      type: 'keyword',
    }));
    return options.length ? { from, options, validFor: /^[A-Za-z0-9_-]*$/ } : null;
  };
  const hover = hoverTooltip((view, pos) => {
    const line = view.state.doc.lineAt(pos);
    const h = head(line.text);
    if (!h || pos < line.from + h.from || pos > line.from + h.to) return null;
    const second = /^\s+([A-Za-z][A-Za-z0-9_-]*)/.exec(line.text.slice(h.to))?.[1];
    const doc = book.lookup(second ? [h.word, second] : [h.word]);
    if (!doc) return null;
    return {
      pos: line.from + h.from,
      end: line.from + h.to,
      above: true,
      create: () => {
        const dom = document.createElement('div');
        dom.className = 'command-help';
        dom.dataset.command = doc.name;
        const syntax = document.createElement('code');
        syntax.textContent = doc.syntax;
        const summary = document.createElement('p');
        summary.textContent = doc.summary || '(the server gave no summary)';
        const facts = document.createElement('small');
        const arity = doc.arity > 0 ? `exactly ${doc.arity} words` : `at least ${-doc.arity} words`;
        facts.textContent = [doc.group && `group ${doc.group}`, doc.since && `since ${doc.since}`, doc.complexity, `arity: ${arity}`].filter(Boolean).join(' · ');
        dom.append(syntax, summary, facts);
        return { dom };
      },
    };
  });
  return [autocompletion({ override: [source], activateOnTyping: true, defaultKeymap: opts.defaultKeymap ?? true }), hover];
}
