// One session (POST /api/v1/sessions) for the playground's interactive
// console: opened on the first command, every command then a one-command
// batch on that session's own connection, so WATCH and MULTI state carry
// from one command to the next as in redis-cli. A session that is gone
// (idle timeout: 404 `session_not_found`; its connection dropped: 409
// `session_lost`) is forgotten and never reopened behind the reader's back:
// the command that met it was not run, and the next one opens a new session.
import { ApiError, batch, createSession, deleteSession, type BatchResponse, type Session, type SessionOptions } from '../api/client.js';

/** Why a command did not reach Redis, in the reader's words. */
export interface Refusal {
  code: string;
  message: string;
  /** The session is gone: its WATCH / MULTI state with it. */
  ended: boolean;
}

/** A session's open state as the console shows it. */
export interface SessionInfo {
  id: string;
  /** The connection's settings, fixed at opening. */
  opts: SessionOptions;
  idleMs: number;
  /** ms since the epoch when the idle timeout closes it, counted from the last command. */
  expiresAtMs: number;
}

export type Outcome = { ok: true; res: BatchResponse; opened: boolean } | { ok: false; refusal: Refusal };

/** What the API's session errors mean here (docs/api.md#sessions). */
export function refusalOf(e: unknown, idleMs: number): Refusal {
  const err = e as ApiError;
  switch (err.code) {
    case 'session_not_found':
      return {
        code: err.code,
        ended: true,
        message: `The session is gone (session_not_found): it was closed after ${Math.round(idleMs / 1000)} s without a command, or by the server. Its WATCH and MULTI state went with it. This command was not run; send it again to open a new session.`,
      };
    case 'session_lost':
      return {
        code: err.code,
        ended: true,
        message: "The session's connection to Redis was lost (session_lost): its WATCH and MULTI state are gone, so it is not reopened behind your back. This command was not run; send it again to open a new session.",
      };
    case 'session_busy':
      return { code: err.code, ended: false, message: 'The session is still running an earlier command (session_busy); this one was not run.' };
    default: {
      // The console sends one command as `text`: "text, line 1: " (a refusal) or "text: line 1, "
      // (a parse error, then its column) would name a field and a line the console has not.
      const message = (err.message ?? String(e)).replace(/^text, line \d+: /, '').replace(/^text: line \d+, /, '');
      return { code: err.code ?? 'error', ended: false, message: `${message}${err.code ? ` (${err.code})` : ''}` };
    }
  }
}

export class SessionLink {
  private session: SessionInfo | null = null;
  private opening: Promise<SessionInfo> | null = null;

  get info(): SessionInfo | null {
    return this.session;
  }

  /**
   * Runs one command (inline text) on the session, opening it first with
   * `opts` if there is none (an open session keeps the settings it opened with).
   */
  async send(text: string, opts: SessionOptions = {}): Promise<Outcome> {
    let opened = false;
    let s = this.session;
    try {
      if (!s) {
        this.opening ??= createSession(opts).then((r: Session) => ({ id: r.id, opts, idleMs: r.idle_ms, expiresAtMs: r.expires_at_ms }));
        s = await this.opening.finally(() => (this.opening = null));
        this.session = s;
        opened = true;
      }
    } catch (e) {
      return { ok: false, refusal: refusalOf(e, 0) };
    }
    try {
      const res = await batch({ text, mode: 'sequential', session: s.id });
      s.expiresAtMs = Date.now() + s.idleMs;
      return { ok: true, res, opened };
    } catch (e) {
      const refusal = refusalOf(e, s.idleMs);
      if (refusal.ended && this.session?.id === s.id) this.session = null;
      return { ok: false, refusal };
    }
  }

  /** Closes the session, if any (DELETE); `keepalive` while the page goes away. */
  async close(keepalive = false): Promise<void> {
    const s = this.session;
    this.session = null;
    if (s) await deleteSession(s.id, keepalive).catch(() => undefined);
  }
}
