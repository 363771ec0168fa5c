// The sandbox note: with `pipelab serve --sandbox` (GET /api/v1/info has
// `sandbox`), each visitor (a cookie) has a redis-server of their own,
// which goes with its keys once they are idle that long; the page says so,
// and what became of a returning visitor's keys when they must be told.
import type { InfoResponse } from '../api/types.js';

/** "1 h", "30 min", "90 s": a duration as people read it. */
export function ttlText(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

/** Shows the note if the server runs a sandbox. */
export function showSandbox(info: InfoResponse | null): void {
  const note = document.getElementById('sandbox-note');
  const sandbox = info?.sandbox;
  if (!note || !sandbox) return;
  note.textContent = `sandbox: a Redis of your own, deleted with its keys after ${ttlText(sandbox.idle_s)} idle`;
  // A returning visitor whose saved keys had to go is told before they look for them.
  if (sandbox.notice) note.textContent = `${sandbox.notice} ${note.textContent}`;
  note.hidden = false;
}
