// Sharing: "Copy permalink" (in the tab bar, on every view) and the export
// bar under the playground's controls, which shows the generated file for the
// chosen target and mode with Download and Copy buttons.
import type { PageState } from '../permalink.js';
import { encodePermalink } from '../permalink.js';
import { bytesToView } from '../editor/respText.js';
import { download } from './download.js';
import { commandsOf, encodeCommand } from './fromText.js';
import { exportBatch, TARGETS, type ExportMode, type TargetId } from './index.js';
import { el } from '../dom.js';

/** The text shown in the preview: source as is; RESP with CR LF made visible and bytes that are not UTF-8 as `\xHH` (not `�`). */
function previewOf(content: string | Uint8Array): string {
  if (typeof content === 'string') return content;
  const text = bytesToView(content.subarray(0, 64 * 1024)).replace(/[\udc80-\udcff]/g, (c) => `\\x${(c.charCodeAt(0) - 0xdc00).toString(16).padStart(2, '0')}`);
  return text.replace(/\r\n/g, '\\r\\n\n') + (content.length > 64 * 1024 ? `\n… (${content.length} bytes in all)` : '');
}

/** Longest permalink said to be shareable, in characters (many chat tools cut at 4–8 K). */
export const PERMALINK_MAX = 8000;

/**
 * "Copy permalink": the state (with the open view) into the address bar and
 * the clipboard. `button` goes in the tab bar; `status` (what happened, and
 * a warning when the link is too long to share) on its own line under it,
 * so the tab bar never wraps; `clear()` takes it away when another view is shown.
 */
export function permalinkButton(state: () => PageState): { button: HTMLElement; status: HTMLElement; clear: () => void } {
  const status = el('p', { class: 'share-status permalink-status', role: 'status', id: 'permalink-status' });
  status.hidden = true;
  const linkBtn = el('button', { type: 'button', id: 'permalink', title: 'A link that reopens this page with this batch, mode, options, view and its settings' }, 'Copy permalink');
  linkBtn.addEventListener('click', async () => {
    const frag = await encodePermalink(state());
    history.replaceState(null, '', frag);
    // Chat tools and mail clients cut links far shorter than browsers take them.
    const long = location.href.length > PERMALINK_MAX
      ? ` The link is ${location.href.length.toLocaleString('en-US')} characters, too long to share reliably: export the batch as a RESP file (Export, below the playground's controls) and share that.`
      : '';
    try {
      await navigator.clipboard.writeText(location.href);
      status.textContent = `Permalink copied (and in the address bar).${long}`;
    } catch {
      status.textContent = `Permalink in the address bar.${long}`;
    }
    status.toggleAttribute('data-too-long', long !== '');
    status.hidden = false;
  });
  const clear = () => {
    status.textContent = '';
    status.removeAttribute('data-too-long');
    status.hidden = true;
  };
  return { button: el('span', { class: 'permalink' }, linkBtn), status, clear };
}

/** Lines of the batch the preview is generated for; Download and Copy generate the whole file. */
const PREVIEW_COMMANDS = 100;

/** The first `n` lines of `text` (inline commands never span lines), and whether that is all of it. */
function firstLines(text: string, n: number): { text: string; whole: boolean } {
  let at = -1;
  for (let k = 0; k < n; k++) {
    at = text.indexOf('\n', at + 1);
    if (at < 0) return { text, whole: true };
  }
  return { text: text.slice(0, at), whole: false };
}

/**
 * The export bar under the playground's controls. The preview shows the file
 * for the first commands only, so that an open preview of a 20,000-command
 * batch follows the editor without blocking the page (it took 0.7 s a change);
 * Download and Copy generate the whole file when clicked.
 */
export function shareBar(opts: { state: () => PageState; commands: () => number; onBatchChange?: (listener: () => void) => void; redis?: () => string | null }): HTMLElement {
  const status = el('span', { class: 'share-status', role: 'status', id: 'share-status' });
  const target = el('select', { id: 'export-target', 'aria-label': 'Export format' }, ...TARGETS.map((t) => el('option', { value: t.id }, t.label)));
  const mode = el('select', { id: 'export-mode', 'aria-label': 'Export as' }, el('option', { value: 'pipeline' }, 'pipeline'), el('option', { value: 'transaction' }, 'MULTI/EXEC transaction'));
  const exportBtn = el('button', { type: 'button', id: 'export' }, 'Export');
  const calls = el('p', { class: 'export-calls', id: 'export-calls' });
  const pre = el('pre', { class: 'export-preview', id: 'export-preview', tabindex: '0' });
  const dlBtn = el('button', { type: 'button', id: 'export-download' }, 'Download');
  const copyBtn = el('button', { type: 'button', id: 'export-copy' }, 'Copy');
  const panel = el('div', { class: 'export-panel', id: 'export-panel' }, calls, pre, el('div', {}, dlBtn, ' ', copyBtn));
  panel.hidden = true;
  const chosenMode = () => (mode.value === 'transaction' ? 'transaction' : 'pipeline') as ExportMode;
  /** The export of the batch's first `limit` lines (all of it without a limit). */
  const build = (limit?: number) => {
    const s = opts.state();
    const part = limit === undefined ? { text: s.text, whole: true } : firstLines(s.text, limit);
    const cmds = commandsOf(part.text);
    if (cmds.length === 0) throw new Error('nothing to export: the editor has no commands');
    return { snippet: exportBatch(target.value as TargetId, cmds, chosenMode(), encodeCommand, opts.redis?.(), location.origin), whole: part.whole };
  };

  const generate = () => {
    try {
      const { snippet, whole } = build(PREVIEW_COMMANDS);
      const m = chosenMode();
      const total = opts.commands();
      const t = TARGETS.find((x) => x.id === target.value)!;
      calls.textContent = `${t.label}: ${t.calls[m]} · ${total.toLocaleString('en-US')} command${total === 1 ? '' : 's'} · run: ${snippet.run}`;
      pre.textContent = previewOf(snippet.content) + (whole ? '' : `\n… shown for the first ${PREVIEW_COMMANDS} lines of the batch; Download and Copy give all ${total.toLocaleString('en-US')} commands`);
      pre.dataset.target = snippet.target;
      pre.dataset.mode = m;
      panel.hidden = false;
      status.textContent = '';
    } catch (e) {
      panel.hidden = true;
      status.textContent = `Export failed: ${(e as Error).message}`;
    }
  };
  /** The whole file, or null (with the reason in the status line). */
  const whole = () => {
    try {
      return build().snippet;
    } catch (e) {
      status.textContent = `Export failed: ${(e as Error).message}`;
      return null;
    }
  };
  exportBtn.addEventListener('click', generate);
  // An open preview follows the editor (typing, a sample, a lesson's "Load
  // example"); debounced, as a preview of 100,000 commands takes a moment.
  let refresh: ReturnType<typeof setTimeout> | undefined;
  opts.onBatchChange?.(() => {
    if (panel.hidden) return;
    clearTimeout(refresh);
    refresh = setTimeout(() => panel.hidden || generate(), 150);
  });
  target.addEventListener('change', () => panel.hidden || generate());
  mode.addEventListener('change', () => panel.hidden || generate());
  dlBtn.addEventListener('click', () => {
    const current = whole();
    if (current) download(current.filename, current.content, current.mime);
  });
  copyBtn.addEventListener('click', async () => {
    const current = whole();
    if (!current) return;
    const text = typeof current.content === 'string' ? current.content : new TextDecoder().decode(current.content);
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = 'Copied.';
    } catch {
      status.textContent = 'Copy failed: select the text and copy it by hand.';
    }
  });

  return el('section', { class: 'share', id: 'share', 'aria-label': 'Export' }, el('label', {}, 'Export the batch as ', target), ' ', mode, ' ', exportBtn, ' ', status, panel);
}
