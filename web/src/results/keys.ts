// The key browser under the playground: what keys a batch or a lesson left
// behind in the Redis the page runs on (in the sandbox, the visitor's own),
// with their type, memory and TTL, without typing SCAN. Two batches through
// the API per page of keys: `SCAN cursor MATCH pattern COUNT n`, then one
// pipeline of `TYPE`, `MEMORY USAGE` and `PTTL` for each key found.
import { batch, type CommandResult } from '../api/client.js';
import { el } from '../dom.js';
import './keys.css';

/** Keys asked of SCAN per page (its COUNT: a hint, Redis may return more or fewer). */
export const SCAN_COUNT = 100;

/** A reply JSON bulk string as an API argument: the text, or its bytes in base64. */
type Arg = string | { base64: string };
interface Bulk {
  type: string;
  value?: unknown;
  base64?: string;
}

const argOf = (b: Bulk): Arg => (b.base64 !== undefined ? { base64: b.base64 } : String(b.value ?? ''));

/** A key as redis-cli quotes one: "text", bytes that are not UTF-8 as \xHH. */
function shown(b: Bulk): string {
  if (b.base64 === undefined) return JSON.stringify(String(b.value ?? ''));
  const bytes = atob(b.base64);
  let s = '';
  for (const c of bytes) {
    const code = c.charCodeAt(0);
    s += code >= 0x20 && code < 0x7f && c !== '"' && c !== '\\' ? c : `\\x${code.toString(16).padStart(2, '0')}`;
  }
  return `"${s}"`;
}

function ttlText(ms: number): string {
  if (ms === -1) return 'none';
  if (ms === -2) return 'gone';
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 120) return `${s.toFixed(1)} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

const replyOf = (r: CommandResult | undefined) => (r?.status === 'ok' ? (r.reply as { type: string; value?: unknown } | undefined) : undefined);

export interface KeyRow {
  key: Bulk;
  type: string;
  bytes: number | null;
  ttlMs: number | null;
}

/** One page of keys from `cursor`: the rows and the next cursor ("0" when the scan is complete). */
export async function scanPage(cursor: string, pattern: string): Promise<{ rows: KeyRow[]; next: string }> {
  const scan = await batch({ commands: [['SCAN', cursor, 'MATCH', pattern || '*', 'COUNT', String(SCAN_COUNT)]] });
  const r = scan.results[0];
  if (r?.status !== 'ok') throw new Error(`SCAN: ${(r?.reply as Bulk | undefined)?.value ?? r?.status ?? 'no reply'}`);
  const [next, keys] = (r.reply as { value: [Bulk, { value: Bulk[] }] }).value;
  const found = keys.value;
  if (found.length === 0) return { rows: [], next: String(next.value) };
  const commands = found.flatMap((k) => [['TYPE', argOf(k)], ['MEMORY', 'USAGE', argOf(k)], ['PTTL', argOf(k)]]);
  const facts = await batch({ commands, mode: 'pipeline', batch_size: commands.length });
  const rows = found.map((key, i) => {
    const [type, bytes, ttl] = [0, 1, 2].map((j) => replyOf(facts.results[3 * i + j]));
    return {
      key,
      type: type?.value !== undefined ? String(type.value) : '—',
      bytes: typeof bytes?.value === 'number' ? bytes.value : null,
      ttlMs: typeof ttl?.value === 'number' ? ttl.value : null,
    };
  });
  return { rows, next: String(next.value) };
}

/** The panel: a pattern, "Scan keys" (from the start), "Scan more" (from where the last page ended), the table. */
export function keyBrowser(): HTMLElement {
  const pattern = el('input', { type: 'text', id: 'keys-pattern', value: '*', spellcheck: 'false', autocomplete: 'off' });
  const scanBtn = el('button', { type: 'button', id: 'keys-scan' }, 'Scan keys');
  const moreBtn = el('button', { type: 'button', id: 'keys-more' }, 'Scan more');
  moreBtn.hidden = true;
  const status = el('p', { id: 'keys-status', class: 'keys-status', role: 'status' });
  const body = el('tbody', {});
  const tableBox = el(
    'div',
    { class: 'scroll-box keys-box' },
    el('table', { class: 'lesson-table', id: 'keys-table' }, el('thead', {}, el('tr', {}, ...['key', 'type', 'memory', 'TTL'].map((h) => el('th', {}, h)))), body),
  );
  tableBox.hidden = true;
  let cursor = '0';
  let shownKeys = 0;
  const scan = async (fresh: boolean) => {
    if (fresh) {
      cursor = '0';
      shownKeys = 0;
      body.replaceChildren();
    }
    scanBtn.disabled = moreBtn.disabled = true;
    status.textContent = 'Scanning…';
    try {
      // SCAN may answer an empty page with more to come: go on until keys or the end.
      let page: Awaited<ReturnType<typeof scanPage>>;
      let pages = 0;
      do {
        page = await scanPage(cursor, pattern.value);
        cursor = page.next;
        pages++;
      } while (page.rows.length === 0 && cursor !== '0' && pages < 50);
      for (const row of page.rows) {
        body.append(
          el(
            'tr',
            { 'data-type': row.type },
            el('td', { class: 'key' }, shown(row.key)),
            el('td', {}, row.type),
            el('td', { 'data-bytes': String(row.bytes ?? '') }, row.bytes === null ? '—' : `${row.bytes.toLocaleString('en-US')} B`),
            el('td', { 'data-ttl-ms': String(row.ttlMs ?? '') }, row.ttlMs === null ? '—' : ttlText(row.ttlMs)),
          ),
        );
      }
      shownKeys += page.rows.length;
      tableBox.hidden = shownKeys === 0;
      const done = cursor === '0';
      moreBtn.hidden = done;
      status.textContent =
        shownKeys === 0
          ? `No keys match ${JSON.stringify(pattern.value || '*')}.`
          : `${shownKeys.toLocaleString('en-US')} key${shownKeys === 1 ? '' : 's'} matching ${JSON.stringify(pattern.value || '*')}${done ? ', the whole keyspace scanned' : '; Scan more goes on from where SCAN stopped'}. Memory: MEMORY USAGE (bytes, the key and its value); TTL: PTTL (none: kept until deleted).`;
    } catch (e) {
      status.textContent = `Scan failed: ${(e as Error).message}`;
    } finally {
      scanBtn.disabled = moreBtn.disabled = false;
    }
  };
  scanBtn.addEventListener('click', () => void scan(true));
  moreBtn.addEventListener('click', () => void scan(false));
  pattern.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      void scan(true);
    }
  });
  return el(
    'section',
    { id: 'keys', class: 'keys', 'aria-labelledby': 'keys-title' },
    el('h2', { id: 'keys-title' }, 'Keys ', el('span', { class: 'sub' }, 'what your batches left in Redis: SCAN, then TYPE, MEMORY USAGE and PTTL of each key')),
    el('div', { class: 'keys-controls' }, el('label', {}, 'Pattern (SCAN MATCH) ', pattern), ' ', scanBtn, ' ', moreBtn),
    status,
    tableBox,
  );
}
