// Results table: one row per command. Only the rows in view exist in the
// DOM (fixed row height), so 10 000 results scroll without freezing. A row
// opens its full reply in redis-cli format, and the raw RESP on demand.
import type { BatchResponse, CommandResult } from '../api/client.js';
import { escapeBytes } from '../editor/respText.js';
import { formatReply, replyToResp } from '../wasm.js';
import { asUtf8 } from './replyText.js';

/** Row height, px: one line, or two in the compact layout of narrow screens (style.css, same width). */
const COMPACT = window.matchMedia('(max-width: 760px)');
const rowH = () => (COMPACT.matches ? 46 : 28);
const OVERSCAN = 8;

const STATUS_TEXT: Record<string, string> = {
  ok: 'ok',
  error: 'error',
  not_sent: 'not sent',
  unknown: 'unknown',
};

const STATUS_HELP: Record<string, string> = {
  not_sent: 'Never written to Redis (an earlier error with on_error "stop", or the batch was cut short).',
  unknown: 'Written, but the connection failed before its reply: it may or may not have run. It is not retried.',
};

const ms = (us?: number | null) => (us == null ? '—' : (us / 1000).toFixed(3));

function cell(text: string, cls: string): HTMLElement {
  const d = document.createElement('div');
  d.setAttribute('role', 'cell');
  d.className = cls;
  d.textContent = text;
  return d;
}

export class ResultsTable {
  private results: CommandResult[] = [];
  private label: (i: number) => string = () => '';
  private body: HTMLElement;
  private rows = new Map<number, HTMLElement>();
  private selected = -1;
  private replyCache = new Map<number, string>();

  constructor(private scroller: HTMLElement, private detail: HTMLElement) {
    const header = document.createElement('div');
    header.className = 'row header';
    header.setAttribute('role', 'row');
    for (const [t, c] of [['#', 'c-index'], ['command', 'c-cmd'], ['reply', 'c-reply'], ['status', 'c-status'], ['sent ms', 'c-time'], ['reply ms', 'c-time']]) {
      const h = cell(t, c);
      h.setAttribute('role', 'columnheader');
      header.append(h);
    }
    this.body = document.createElement('div');
    this.body.className = 'rows';
    this.body.setAttribute('role', 'rowgroup');
    scroller.replaceChildren(header, this.body);
    scroller.addEventListener('scroll', () => this.render());
    new ResizeObserver(() => this.render()).observe(scroller);
    // Rows are placed for one row height: place them again when it changes.
    COMPACT.addEventListener('change', () => {
      this.rows.forEach((r) => r.remove());
      this.rows.clear();
      this.body.style.height = `${this.results.length * rowH()}px`;
      this.render();
    });
  }

  set(response: BatchResponse | null, label: (i: number) => string) {
    this.results = response?.results ?? [];
    this.label = label;
    this.rows.forEach((r) => r.remove());
    this.rows.clear();
    this.replyCache.clear();
    this.selected = -1;
    this.closeDetail();
    this.body.style.height = `${this.results.length * rowH()}px`;
    this.scroller.setAttribute('aria-rowcount', String(this.results.length + 1));
    this.scroller.scrollTop = 0;
    this.render();
  }

  /** Results of a batch still running: rows appear as they come, the scroll position and the open detail stay. */
  grow(results: CommandResult[], label: (i: number) => string) {
    this.results = results;
    this.label = label;
    this.body.style.height = `${this.results.length * rowH()}px`;
    this.scroller.setAttribute('aria-rowcount', String(this.results.length + 1));
    this.render();
  }

  private replyText(i: number): string {
    let s = this.replyCache.get(i);
    if (s === undefined) {
      const r = this.results[i];
      s = r.reply ? formatReply(r.reply).trimEnd() : '';
      this.replyCache.set(i, s);
    }
    return s;
  }

  private render() {
    const first = Math.max(0, Math.floor(this.scroller.scrollTop / rowH()) - OVERSCAN);
    const last = Math.min(this.results.length, Math.ceil((this.scroller.scrollTop + this.scroller.clientHeight) / rowH()) + OVERSCAN);
    for (const [i, el] of this.rows) {
      if (i < first || i >= last) {
        el.remove();
        this.rows.delete(i);
      }
    }
    for (let i = first; i < last; i++) {
      if (!this.rows.has(i)) {
        const el = this.row(i);
        this.rows.set(i, el);
        this.body.append(el);
      }
    }
  }

  private row(i: number): HTMLElement {
    const r = this.results[i];
    const row = document.createElement('div');
    row.className = `row status-${r.status}${i === this.selected ? ' selected' : ''}`;
    row.setAttribute('role', 'row');
    row.setAttribute('aria-rowindex', String(i + 2));
    row.tabIndex = 0;
    row.style.top = `${i * rowH()}px`;
    row.dataset.index = String(i);
    const reply = this.replyText(i);
    const firstLine = reply.split('\n', 1)[0] ?? '';
    row.append(
      cell(String(r.index + 1), 'c-index'),
      cell(this.label(r.index), 'c-cmd'),
      cell(reply.includes('\n') ? `${firstLine} …` : firstLine || (r.status === 'ok' ? '' : '—'), 'c-reply'),
      cell(STATUS_TEXT[r.status] ?? r.status, `c-status badge-${r.status}`),
      cell(ms(r.sent_us), 'c-time'),
      cell(ms(r.reply_us), 'c-time'),
    );
    row.title = STATUS_HELP[r.status] ?? '';
    const open = () => this.select(i);
    row.addEventListener('click', open);
    row.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        open();
      } else if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const next = Math.min(Math.max(i + (e.key === 'ArrowDown' ? 1 : -1), 0), this.results.length - 1);
        this.scroller.scrollTop = Math.max(0, Math.min(this.scroller.scrollTop, next * rowH()), (next + 1) * rowH() - this.scroller.clientHeight + rowH());
        this.render();
        this.rows.get(next)?.focus();
      }
    });
    return row;
  }

  /** Whether the detail shows UTF-8 text (true) or redis-cli's escapes; kept from one row to the next. */
  private utf8 = false;

  private closeDetail() {
    this.detail.replaceChildren();
    this.detail.hidden = true;
    this.detail.parentElement?.classList.remove('has-detail');
  }

  /**
   * Shows command i's whole reply beside the table (under it on a narrow
   * screen, scrolled into view): redis-cli's escaped form or UTF-8 text,
   * and its RESP bytes.
   */
  select(i: number) {
    this.rows.get(this.selected)?.classList.remove('selected');
    this.selected = i;
    this.rows.get(i)?.classList.add('selected');
    const r = this.results[i];
    const title = document.createElement('h3');
    title.textContent = `#${r.index + 1} ${this.label(r.index)} — ${STATUS_TEXT[r.status] ?? r.status}`;
    const close = document.createElement('button');
    close.type = 'button';
    close.className = 'close';
    close.textContent = '×';
    close.setAttribute('aria-label', 'Close the reply');
    close.addEventListener('click', () => {
      this.rows.get(this.selected)?.classList.remove('selected');
      this.selected = -1;
      this.closeDetail();
    });
    const parts: HTMLElement[] = [title];
    if (STATUS_HELP[r.status]) {
      const p = document.createElement('p');
      p.textContent = STATUS_HELP[r.status];
      parts.push(p);
    }
    if (r.reply) {
      const escaped = this.replyText(i);
      const pre = document.createElement('pre');
      pre.className = 'reply-cli';
      const toggle = document.createElement('button');
      toggle.type = 'button';
      toggle.className = 'encoding';
      const paint = () => {
        pre.textContent = this.utf8 ? asUtf8(escaped) : escaped;
        toggle.textContent = this.utf8 ? 'Show escaped (redis-cli)' : 'Show as UTF-8 text';
        toggle.setAttribute('aria-pressed', String(this.utf8));
      };
      toggle.addEventListener('click', () => {
        this.utf8 = !this.utf8;
        paint();
      });
      paint();
      const bytes = replyToResp(r.reply);
      const rawTitle = document.createElement('h4');
      rawTitle.textContent = `RESP bytes (${bytes.length.toLocaleString('en-US')})`;
      const raw = document.createElement('pre');
      raw.className = 'reply-raw';
      raw.textContent = `${escapeBytes(bytes).replace(/\\r\\n/g, '\\r\\n\n').trimEnd()}\n(${bytes.length} bytes)`;
      parts.push(toggle, pre, rawTitle, raw);
    }
    parts.push(close);
    this.detail.replaceChildren(...parts);
    this.detail.hidden = false;
    this.detail.parentElement?.classList.add('has-detail');
    this.detail.scrollIntoView({ block: 'nearest' });
  }
}
