// The sandbox note: with `pipelab serve --sandbox` (GET /api/v1/info has
// `sandbox`), each visitor's keys live in a namespace of their own, kept in
// a cookie, and expire after the sandbox TTL; the page says so.
import type { InfoResponse } from '../api/types.js';

/** "1 h", "30 min", "90 s": the TTL as people read it. */
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
  note.textContent = `sandbox: your keys are private and deleted after ${ttlText(sandbox.ttl_s)}`;
  note.hidden = false;
}
