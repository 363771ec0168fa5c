// Guided practice in the interactive console, as try.redis guided its
// readers: each step asks for one command, checks what the reader typed and
// the reply Redis gave, and explains what happened (with the round trip the
// command just took). A wrong command is run all the same (it is the
// reader's console) and the step says what it expected instead.
import type { ReplyJson } from '../replyJson.js';

/** What the console knows of one command once Redis answered. */
export interface Typed {
  /** The arguments as typed, split as Redis splits them. */
  argv: string[];
  reply: ReplyJson | undefined;
  /** The command's round trip (its reply time minus its write time), µs. */
  us: number | null;
}

export interface Step {
  /** What to type, shown as code. */
  ask: string;
  /** Checks the typed command and its reply; a string says what was expected instead. */
  check(t: Typed): true | string;
  /** Shown once the step is passed: what happened, and why it matters for round trips. */
  explain(t: Typed): string;
}

const upper = (s: string | undefined) => (s ?? '').toUpperCase();
const ms = (us: number | null) => (us == null ? 'a round trip' : `${(us / 1000).toFixed(3)} ms`);
const is = (argv: string[], ...want: string[]) =>
  argv.length === want.length && argv.every((a, i) => (i === 0 ? upper(a) === upper(want[0]) : a === want[i]));
const asked = (step: string) => `type ${step} exactly`;

/** The practice: one connection, one command at a time, each paying its round trip. */
export const PRACTICE: Step[] = [
  {
    ask: 'PING',
    check: (t) => (is(t.argv, 'PING') && t.reply?.type === 'simple' ? true : asked('PING')),
    explain: (t) => `PONG came back after ${ms(t.us)}: one command, one round trip. Raise the simulated RTT (turn interactive off and on to reopen the session) and PING again: the time follows the RTT, not Redis.`,
  },
  {
    ask: 'SET visits 0',
    check: (t) => (is(t.argv, 'SET', 'visits', '0') && t.reply?.type === 'simple' ? true : asked('SET visits 0')),
    explain: (t) => `OK, after ${ms(t.us)}. Every command typed here waits for its reply before the next can be sent: that is sequential mode, one round trip each.`,
  },
  {
    ask: 'INCR visits',
    check: (t) => (is(t.argv, 'INCR', 'visits') && t.reply?.type === 'integer' ? true : asked('INCR visits')),
    explain: (t) => `Redis answered ${String((t.reply as { value?: unknown })?.value)}: INCR reads and writes in one command, on the server, in ${ms(t.us)}. A GET then a SET would have taken two round trips, and another client could have written in between.`,
  },
  {
    ask: 'MULTI',
    check: (t) => (is(t.argv, 'MULTI') && t.reply?.type === 'simple' ? true : asked('MULTI')),
    explain: () => 'The prompt now says redis(TX)>: the next commands are queued on the server, not run.',
  },
  {
    ask: 'INCR visits',
    check: (t) => (is(t.argv, 'INCR', 'visits') && t.reply?.type === 'simple' && (t.reply as { value?: unknown }).value === 'QUEUED' ? true : 'INCR visits, inside the transaction (its reply is QUEUED)'),
    explain: (t) => `QUEUED, after ${ms(t.us)}: typed one by one, each queued command still costs a round trip. A client library sends MULTI, the commands and EXEC in one write: one round trip for all (lesson 4).`,
  },
  {
    ask: 'EXEC',
    check: (t) => (is(t.argv, 'EXEC') && t.reply?.type === 'array' ? true : asked('EXEC')),
    explain: () => 'EXEC ran the queued INCR and answered with its reply in an array. Five commands typed, five round trips; a pipeline would have sent them in one.',
  },
];

/** Where a reader is in the practice. */
export class Practice {
  private i = 0;
  constructor(private steps: Step[] = PRACTICE) {}

  /** The step waiting for the reader, or null when done. */
  current(): Step | null {
    return this.steps[this.i] ?? null;
  }

  get index(): number {
    return this.i;
  }

  get length(): number {
    return this.steps.length;
  }

  /** Checks `t` against the current step: passed (and moves on) with its explanation, or what was expected. */
  take(t: Typed): { passed: true; explanation: string } | { passed: false; expected: string } | null {
    const step = this.current();
    if (!step) return null;
    const verdict = step.check(t);
    if (verdict !== true) return { passed: false, expected: verdict };
    this.i += 1;
    return { passed: true, explanation: step.explain(t) };
  }
}
