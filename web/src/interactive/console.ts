// The playground's "interactive" toggle: a redis-cli-like console. Each line
// typed is one command, run on the console's session (./session.ts), so
// `MULTI` … `EXEC` can be typed step by step and every `QUEUED` seen, and a
// `WATCH` holds until `EXEC`. While it is on, the batch editors, batch-only
// controls and batch results are hidden (CSS: main.interactive-on); the RTT
// and RESP3 controls set the connection a new session opens. Turning it off,
// or leaving the page, closes the session. The command line is a one-line
// CodeMirror editor with the inline editor's help: names completed and
// hovered from the server's COMMAND DOCS (../editor/commandHelp.ts).
import { acceptCompletion, closeCompletion, completionStatus, moveCompletionSelection } from '@codemirror/autocomplete';
import { EditorState, Prec } from '@codemirror/state';
import { EditorView, keymap, placeholder } from '@codemirror/view';
import { commandDocs } from '../api/client.js';
import { CommandBook, commandHelp, helpText } from '../editor/commandHelp.js';
import { commandsOf } from '../export/fromText.js';
import { formatReply, inlineToResp } from '../wasm.js';
import { el } from '../dom.js';
import { Practice } from './practice.js';
import { SessionLink, type SessionInfo } from './session.js';
import { nextTxState } from './txState.js';
import './interactive.css';

export interface Interactive {
  /** True while the toggle is on (the batch Run then does nothing). */
  active(): boolean;
}

/** `settings`: the RTT, bandwidth and RESP3 a new session opens with (the playground's controls). */
export function mountInteractive(opts: { settings: () => { simulated_rtt_ms: number; simulated_bandwidth_mbps?: number; resp3: boolean } }): Interactive {
  const main = document.querySelector('main')!;
  const form = document.getElementById('controls')!;
  const toggle = el('input', { type: 'checkbox', id: 'interactive' });
  const toggleLabel = el('label', { class: 'check', title: 'One command at a time on one connection (a session), like redis-cli' }, toggle, ' interactive');
  (form.querySelector('.field-stack') ?? form).append(toggleLabel);

  const status = el('p', { id: 'session-status', class: 'session-status' }, 'No session yet: the first command opens one.');
  const log = el('div', { id: 'console-log', class: 'console-log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Commands and replies' });
  const prompt = el('span', { class: 'prompt', id: 'console-prompt' }, 'redis> ');
  const inputBox = el('div', { class: 'console-input' });
  const send = el('button', { type: 'submit', class: 'run', id: 'console-send' }, 'Send');
  const close = el('button', { type: 'button', id: 'session-close' }, 'Close session');
  const line = el('form', { class: 'console-line', id: 'console-form' }, prompt, inputBox, send, close);
  // The command being typed, as the server's docs describe it (what hovering its name shows).
  const help = el('p', { id: 'console-help', class: 'console-help', 'aria-live': 'polite' });
  const practiceStart = el('button', { type: 'button', id: 'practice-start' }, 'Guided practice');
  const practiceBox = el('div', { id: 'practice', class: 'practice', role: 'status', 'aria-live': 'polite' });
  practiceBox.hidden = true;
  const panel = el(
    'section',
    { id: 'interactive-panel', class: 'interactive', 'aria-labelledby': 'interactive-title' },
    el('h2', { id: 'interactive-title' }, 'Interactive ', el('span', { class: 'sub' }, 'one command at a time on one connection (a session), like redis-cli: WATCH and MULTI state carry to the next command')),
    status,
    el('p', { class: 'practice-intro' }, practiceStart, ' one command at a time, each checked and explained, with the round trip it took.'),
    practiceBox,
    log,
    line,
    help,
  );
  panel.hidden = true;
  form.after(panel);

  const book = new CommandBook();
  let loading: Promise<void> | null = null;
  /** The server's commands, once (again on a later toggle if they could not be had). */
  const loadBook = () => {
    if (book.size > 0 || loading) return;
    loading = commandDocs()
      .then((d) => book.load(d.commands))
      .catch(() => {
        /* no docs: no completion; Redis still answers */
      })
      .finally(() => (loading = null));
  };
  const showHelp = (text: string) => {
    const argv = text.trim().split(/\s+/).filter(Boolean);
    const doc = argv.length ? book.lookup(argv) : undefined;
    help.textContent = doc ? helpText(doc).replace(/\n/g, ' — ') : '';
    help.dataset.command = doc?.name ?? '';
  };
  const input = new EditorView({
    parent: inputBox,
    state: EditorState.create({
      extensions: [
        // Enter sends the line as typed (as redis-cli), Tab takes the completion
        // offered; the arrows move in an open completion list, else walk the history.
        Prec.highest(
          keymap.of([
            { key: 'Enter', run: (v) => (closeCompletion(v), line.requestSubmit(), true) },
            { key: 'Tab', run: acceptCompletion },
            { key: 'Escape', run: closeCompletion },
            { key: 'ArrowUp', run: (v) => (completionStatus(v.state) === 'active' ? moveCompletionSelection(false)(v) : (walk(1), true)) },
            { key: 'ArrowDown', run: (v) => (completionStatus(v.state) === 'active' ? moveCompletionSelection(true)(v) : (walk(-1), true)) },
          ]),
        ),
        commandHelp(book, { defaultKeymap: false }),
        placeholder('SET k 1, MULTI, INCR k, EXEC…'),
        // One line: a pasted line break becomes a space.
        EditorState.transactionFilter.of((tr) => (tr.newDoc.lines > 1 ? [tr, { changes: { from: 0, to: tr.newDoc.length, insert: tr.newDoc.toString().replace(/\r?\n/g, ' ') }, sequential: true }] : tr)),
        EditorView.contentAttributes.of({ id: 'console-input', 'aria-labelledby': 'console-prompt', 'aria-multiline': 'false', 'aria-describedby': 'console-help', spellcheck: 'false', autocapitalize: 'off', autocorrect: 'off' }),
        EditorView.updateListener.of((u) => {
          if (u.docChanged) showHelp(u.state.doc.toString());
        }),
      ],
    }),
  });
  const value = () => input.state.doc.toString();
  const setValue = (text: string) => input.dispatch({ changes: { from: 0, to: input.state.doc.length, insert: text }, selection: { anchor: text.length } });

  const link = new SessionLink();
  let inTx = false;
  let busy = false;
  let n = 0;
  let practice: Practice | null = null;
  const history: string[] = [];
  /** The practice's next step, or its end. */
  const showStep = (said?: HTMLElement) => {
    if (!practice) return;
    const step = practice.current();
    const next = step
      ? el('p', { class: 'practice-ask', 'data-step': String(practice.index + 1) }, `Step ${practice.index + 1} of ${practice.length}: type `, el('code', {}, step.ask))
      : el('p', { class: 'practice-done', 'data-step': 'done' }, 'Practice done: every step passed.');
    practiceBox.replaceChildren(...(said ? [said] : []), next);
    practiceBox.hidden = false;
  };
  practiceStart.addEventListener('click', () => {
    practice = new Practice();
    showStep();
    input.focus();
  });
  let back = 0;

  const setPrompt = () => (prompt.textContent = inTx ? 'redis(TX)> ' : 'redis> ');
  const showSession = (s: SessionInfo | null) => {
    status.dataset.session = s ? 'open' : 'none';
    status.textContent = s
      ? `Session ${s.id.slice(0, 8)}… open (${s.opts.simulated_rtt_ms ?? 0} ms simulated RTT${s.opts.resp3 ? ', RESP3' : ''}, fixed when it opened): one connection, kept between commands; closed after ${Math.round(s.idleMs / 1000)} s without a command (at ${new Date(s.expiresAtMs).toLocaleTimeString('en-GB')}), when you turn interactive off, or when you leave the page.`
      : 'No session: the next command opens one.';
  };
  const entry = (cmd: string, body: HTMLElement, attrs: Record<string, string>) => {
    const e = el('div', { class: 'entry', 'data-n': String(n++), ...attrs }, el('div', { class: 'cmd' }, el('span', { class: 'prompt' }, prompt.textContent ?? ''), cmd), body);
    log.append(e);
    log.scrollTop = log.scrollHeight;
    return e;
  };
  const notice = (text: string, kind: string) => {
    log.append(el('p', { class: `console-notice ${kind}`, role: kind === 'error' ? 'alert' : 'status', 'data-kind': kind }, text));
    log.scrollTop = log.scrollHeight;
  };

  async function submit(text: string) {
    const cmd = text.trim();
    if (!cmd || busy) return;
    const parsed = inlineToResp(cmd);
    if (parsed.errors.length > 0) {
      const e = parsed.errors[0]!;
      entry(cmd, el('pre', { class: 'reply error' }, `(parse error) column ${e.column}: ${e.message}`), { 'data-status': 'parse_error' });
      return;
    }
    if (parsed.commands !== 1) return;
    history.push(cmd);
    back = 0;
    busy = true;
    send.disabled = true;
    try {
      const { simulated_rtt_ms: rtt, simulated_bandwidth_mbps: mbps, resp3 } = opts.settings();
      const out = await link.send(cmd, {
        simulated_rtt_ms: Number.isFinite(rtt) && rtt > 0 ? rtt : 0,
        ...(mbps !== undefined && Number.isFinite(mbps) && mbps > 0 ? { simulated_bandwidth_mbps: mbps } : {}),
        ...(resp3 ? { resp3 } : {}),
      });
      if (!out.ok) {
        entry(cmd, el('pre', { class: 'reply refused' }, '(not run)'), { 'data-status': 'refused', 'data-code': out.refusal.code });
        if (out.refusal.ended) {
          inTx = false;
          setPrompt();
        }
        notice(out.refusal.message, 'error');
        showSession(link.info);
        return;
      }
      if (out.opened) notice(`Opened a session: its own connection to Redis, kept until you close it.`, 'info');
      const r = out.res.results[0];
      const reply = r?.reply;
      const shown = reply ? formatReply(reply).replace(/\n$/, '') : r?.status === 'unknown' ? '(unknown: the connection failed before the reply; it may or may not have run)' : `(${r?.status ?? 'no reply'})`;
      const us = r?.reply_us != null && r.sent_us != null ? r.reply_us - r.sent_us : null;
      // The command's own round trip, shown as redis-cli shows its "(0.21s)": the figure a round-trip lesson needs.
      const done = entry(cmd, el('pre', { class: `reply ${r?.status ?? ''}` }, shown), {
        'data-status': r?.status ?? '',
        'data-reply-type': reply?.type ?? '',
        ...(us != null ? { 'data-us': String(us), title: `${(us / 1000).toFixed(3)} ms round trip` } : {}),
      });
      if (us != null) done.append(el('span', { class: 'took', 'data-us': String(us) }, `(${(us / 1000).toFixed(3)} ms)`));
      if (practice?.current()) {
        const argv = commandsOf(cmd)[0]?.map((a) => new TextDecoder().decode(a)) ?? [];
        const got = practice.take({ argv, reply: reply ?? undefined, us });
        if (got) {
          showStep(
            got.passed
              ? el('p', { class: 'practice-passed', 'data-result': 'passed' }, '✔ ', got.explanation)
              : el('p', { class: 'practice-expected', 'data-result': 'expected' }, `Not this step: ${got.expected}. (It ran all the same: this is your console.)`),
          );
        }
      }
      if (out.res.connection_error) notice(`The connection failed: ${out.res.connection_error}. The session is lost with it.`, 'error');
      inTx = nextTxState(inTx, cmd.split(/\s+/)[0] ?? '', reply?.type);
      setPrompt();
      showSession(link.info);
    } finally {
      busy = false;
      send.disabled = false;
      input.focus();
    }
  }

  line.addEventListener('submit', (e) => {
    e.preventDefault();
    const v = value();
    setValue('');
    void submit(v);
  });
  /** One step back (1) or forward (-1) in the commands sent. */
  function walk(step: number) {
    back = Math.max(0, Math.min(history.length, back + step));
    setValue(back === 0 ? '' : history[history.length - back]!);
  }
  const end = async (why: string) => {
    const had = link.info;
    await link.close();
    inTx = false;
    setPrompt();
    showSession(null);
    if (had) notice(why, 'info');
  };
  close.addEventListener('click', () => void end('Session closed: its connection, WATCH and MULTI state are gone.'));
  toggle.addEventListener('change', () => {
    main.classList.toggle('interactive-on', toggle.checked);
    panel.hidden = !toggle.checked;
    if (toggle.checked) {
      loadBook();
      input.focus();
    }
    else void end('Interactive off: the session was closed.');
  });
  // Leaving the page closes the session (a keepalive DELETE outlives the page).
  addEventListener('pagehide', () => void link.close(true));
  return { active: () => toggle.checked };
}
