// Sharing: "Copy permalink" (in the tab bar, on every view) and the export
// bar under the playground's controls, which shows the generated file for the
// chosen target and mode with Download and Copy buttons.
import type { PageState } from '../permalink.js';
import { encodePermalink } from '../permalink.js';
import { download } from './download.js';
import { commandsOf, encodeCommand } from './fromText.js';
import { exportBatch, TARGETS, type ExportMode, type TargetId } from './index.js';

const h = <K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: Array<Node | string>) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...kids);
  return e;
};

/** The text shown in the preview: source as is; RESP with CR LF made visible. */
function previewOf(content: string | Uint8Array): string {
  if (typeof content === 'string') return content;
  const text = new TextDecoder('utf-8', { fatal: false }).decode(content.subarray(0, 64 * 1024));
  return text.replace(/\r\n/g, '\\r\\n\n') + (content.length > 64 * 1024 ? `\n… (${content.length} bytes in all)` : '');
}

/** "Copy permalink": the state (with the open view) into the address bar and the clipboard. */
export function permalinkButton(state: () => PageState): HTMLElement {
  const status = h('span', { class: 'share-status', role: 'status', id: 'permalink-status' });
  const linkBtn = h('button', { type: 'button', id: 'permalink', title: 'A link that reopens this page with this batch, mode, options and view' }, 'Copy permalink');
  linkBtn.addEventListener('click', async () => {
    const frag = await encodePermalink(state());
    history.replaceState(null, '', frag);
    try {
      await navigator.clipboard.writeText(location.href);
      status.textContent = 'Copied (and in the address bar).';
    } catch {
      status.textContent = 'In the address bar.';
    }
  });
  return h('span', { class: 'permalink' }, status, ' ', linkBtn);
}

/** The export bar under the playground's controls. */
export function shareBar(opts: { state: () => PageState; onBatchChange?: (listener: () => void) => void }): HTMLElement {
  const status = h('span', { class: 'share-status', role: 'status', id: 'share-status' });
  const target = h('select', { id: 'export-target', 'aria-label': 'Export format' }, ...TARGETS.map((t) => h('option', { value: t.id }, t.label)));
  const mode = h('select', { id: 'export-mode', 'aria-label': 'Export as' }, h('option', { value: 'pipeline' }, 'pipeline'), h('option', { value: 'transaction' }, 'MULTI/EXEC transaction'));
  const exportBtn = h('button', { type: 'button', id: 'export' }, 'Export');
  const calls = h('p', { class: 'export-calls', id: 'export-calls' });
  const pre = h('pre', { class: 'export-preview', id: 'export-preview', tabindex: '0' });
  const dlBtn = h('button', { type: 'button', id: 'export-download' }, 'Download');
  const copyBtn = h('button', { type: 'button', id: 'export-copy' }, 'Copy');
  const panel = h('div', { class: 'export-panel', id: 'export-panel' }, calls, pre, h('div', {}, dlBtn, ' ', copyBtn));
  panel.hidden = true;
  let current: ReturnType<typeof exportBatch> | null = null;

  const generate = () => {
    const s = opts.state();
    try {
      const cmds = commandsOf(s.text);
      if (cmds.length === 0) throw new Error('nothing to export: the editor has no commands');
      const m = (mode.value === 'transaction' ? 'transaction' : 'pipeline') as ExportMode;
      current = exportBatch(target.value as TargetId, cmds, m, encodeCommand);
      const t = TARGETS.find((x) => x.id === target.value)!;
      calls.textContent = `${t.label}: ${t.calls[m]} · ${cmds.length.toLocaleString('en-US')} command${cmds.length === 1 ? '' : 's'} · run: ${current.run}`;
      pre.textContent = previewOf(current.content);
      pre.dataset.target = current.target;
      pre.dataset.mode = m;
      panel.hidden = false;
      status.textContent = '';
    } catch (e) {
      current = null;
      panel.hidden = true;
      status.textContent = `Export failed: ${(e as Error).message}`;
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
  dlBtn.addEventListener('click', () => current && download(current.filename, current.content, current.mime));
  copyBtn.addEventListener('click', async () => {
    if (!current) return;
    const text = typeof current.content === 'string' ? current.content : new TextDecoder().decode(current.content);
    try {
      await navigator.clipboard.writeText(text);
      status.textContent = 'Copied.';
    } catch {
      status.textContent = 'Copy failed: select the text and copy it by hand.';
    }
  });

  return h('section', { class: 'share', id: 'share', 'aria-label': 'Export' }, h('label', {}, 'Export the batch as ', target), ' ', mode, ' ', exportBtn, ' ', status, panel);
}
