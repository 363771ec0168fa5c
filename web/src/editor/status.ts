// The status lines under the two editors: how many commands and bytes the
// batch has, and the first parse errors.
import type { BatchSnapshot } from './snapshot.js';

const plural = (n: number, w: string) => `${n.toLocaleString('en-US')} ${w}${n === 1 ? '' : 's'}`;

function errorLine(text: string): HTMLElement {
  const e = document.createElement('div');
  e.className = 'error-message';
  e.textContent = text;
  return e;
}

/** Fills both status elements for `s`; at most five inline errors are listed. */
export function renderStatus(inlineStatus: HTMLElement, respStatus: HTMLElement, s: BatchSnapshot, inlineErrors: string[]) {
  const summary = document.createElement('span');
  summary.textContent = `${plural(s.commands, 'command')}${inlineErrors.length ? ` · ${plural(inlineErrors.length, 'error')}` : ''}`;
  inlineStatus.replaceChildren(summary, ...inlineErrors.slice(0, 5).map(errorLine));
  const total = document.createElement('span');
  total.className = 'resp-total';
  total.textContent = `${plural(s.commands, 'command')} · ${plural(s.respBytes, 'byte')} in total`;
  respStatus.replaceChildren(total, ...(s.respError ? [errorLine(s.respError)] : []));
}
