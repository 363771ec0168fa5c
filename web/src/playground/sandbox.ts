// The sandbox note: with `pipelab serve --sandbox` (GET /api/v1/info has
// `sandbox`), each visitor (a cookie) has a redis-server of their own,
// which goes with its keys once they are idle that long; the page says so,
// and what became of a returning visitor's keys when they must be told.
import { SANDBOX_NOTICE } from '../api/client.js';
import type { InfoResponse } from '../api/types.js';

/** "1 h", "30 min", "90 s": a duration as people read it. */
export function ttlText(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** Shows the note if the server runs a sandbox, and what the visitor must be told when they are. */
export function showSandbox(info: InfoResponse | null): void {
  const note = document.getElementById('sandbox-note');
  const sandbox = info?.sandbox;
  if (!note || !sandbox) return;
  const base = `sandbox: a Redis of your own, deleted with its keys after ${ttlText(sandbox.idle_s)} idle`;
  const tell = (notice?: string | null) => {
    note.textContent = notice ? `${notice} ${base}` : base;
  };
  // A returning visitor whose saved keys had to go is told before they look for them;
  // one whose node went away, on the answer of the batch that found out.
  tell(sandbox.notice);
  window.addEventListener(SANDBOX_NOTICE, (e) => tell((e as CustomEvent<string>).detail));
  note.hidden = false;
}
