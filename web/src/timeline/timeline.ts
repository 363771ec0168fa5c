// The waterfall: one row per command, a bar from when it was sent to when its
// reply was read, all on one time axis. Sequential runs draw a staircase (one
// round trip per command); a pipeline draws one block per round trip.
// Canvas, drawn in one pass grouped by colour, so 10 000+ rows stay smooth.
// On a Redis Cluster (results carrying `node`, the master that answered) the
// rows are grouped into one lane per node, labelled with its address, each
// lane's rows in request order: the split of the batch by hash slot, and
// each master's round trips, side by side on the same time axis.
import type { CommandResult, Status } from '../api/client.js';

const COLORS: Record<Status, string> = {
  ok: '#2f7ed8',
  error: '#d9363e',
  unknown: '#e8a317',
  not_sent: '#9aa0a6',
};

const MARGIN = { left: 64, right: 16, top: 10, bottom: 30 };

/** Narrowest bar, CSS px: a 1.5 ms pipeline on a 1 200 ms axis (lesson 2's
 * shared axis) would otherwise be a fraction of a pixel, i.e. invisible. */
export const MIN_BAR_PX = 2;

/** One lane of the timeline: the rows of one cluster node (`node: null`:
 * commands no single node answered: fanned out to every master, or never
 * sent). `top`/`bottom`: CSS px from the canvas's top; `rows`: result
 * indices, in request order. */
export interface Lane {
  node: string | null;
  top: number;
  bottom: number;
  rows: number[];
}

/** Label of the lane of commands without a node. */
export const NO_NODE_LANE = 'no single node';

/**
 * The lanes of `results`: one per distinct `node` (sorted by address), plus
 * one for results without a node if the batch has both; a batch without any
 * node (a single Redis) is one unlabelled lane.
 * Returns each lane's rows; `slot[i]`: the row position of result i.
 */
export function laneRows(results: CommandResult[]): { lanes: Array<{ node: string | null; rows: number[] }>; slot: Int32Array } {
  const byNode = new Map<string | null, number[]>();
  for (let i = 0; i < results.length; i++) {
    const node = results[i].node || null;
    let rows = byNode.get(node);
    if (!rows) byNode.set(node, (rows = []));
    rows.push(i);
  }
  const keys = [...byNode.keys()].sort((a, b) => (a === null ? 1 : b === null ? -1 : a.localeCompare(b, 'en', { numeric: true })));
  const lanes = keys.map((node) => ({ node, rows: byNode.get(node)! }));
  const slot = new Int32Array(results.length);
  let k = 0;
  for (const lane of lanes) for (const i of lane.rows) slot[i] = k++;
  return { lanes, slot };
}

export interface TimelineData {
  results: CommandResult[];
  totalUs: number;
  /** Inline text of command i, for the tooltip. */
  label: (i: number) => string;
}

/** Round number of ms for axis ticks: 1, 2 or 5 × 10^k. */
function niceStep(rangeMs: number, ticks: number): number {
  const raw = rangeMs / ticks;
  const pow = 10 ** Math.floor(Math.log10(raw || 1e-3));
  for (const m of [1, 2, 5, 10]) if (m * pow >= raw) return m * pow;
  return 10 * pow;
}

/**
 * Axis labels with one precision for the whole axis, the step's: a step of
 * 0.05 ms gives 0.00, 0.05, 0.10; 0.5 ms gives 0.0, 0.5, 1.0; 200 ms gives
 * 0, 200, …, 1,200 (thousands with a comma, as everywhere on the page).
 */
export function tickFormat(stepMs: number): (ms: number) => string {
  const decimals = Math.max(0, Math.min(6, -Math.floor(Math.log10(stepMs) + 1e-9)));
  return (ms) => ms.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

const fmtMs = (ms: number) => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3));

export class Timeline {
  private data: TimelineData | null = null;
  private frame = 0;
  /** Lanes of the current data (one, unlabelled, unless results carry nodes). */
  private layout: ReturnType<typeof laneRows> = { lanes: [], slot: new Int32Array(0) };
  /** Result index at each row position (the inverse of `layout.slot`). */
  private order = new Int32Array(0);

  constructor(private canvas: HTMLCanvasElement, private tip: HTMLElement) {
    new ResizeObserver(() => this.schedule()).observe(canvas);
    canvas.addEventListener('mousemove', (e) => this.hover(e));
    canvas.addEventListener('mouseleave', () => (this.tip.hidden = true));
  }

  set(data: TimelineData | null) {
    this.data = data;
    const n = data?.results.length ?? 0;
    this.layout = laneRows(data?.results ?? []);
    this.order = new Int32Array(n);
    this.layout.slot.forEach((k, i) => (this.order[k] = i));
    const lanes = this.labelled()
      ? ` In ${this.layout.lanes.length} lanes, one per cluster node: ${this.layout.lanes.map((l) => `${l.node ?? NO_NODE_LANE} (${l.rows.length})`).join(', ')}.`
      : '';
    this.canvas.setAttribute(
      'aria-label',
      data ? `Timeline of ${n} commands over ${fmtMs(this.maxUs() / 1000)} ms: each bar runs from when a command was sent to when its reply arrived.${lanes}` : 'Timeline: no run yet',
    );
    this.schedule();
  }

  /** True if the rows are in labelled lanes (some result names its node). */
  private labelled(): boolean {
    return this.layout.lanes.some((l) => l.node !== null);
  }

  /** The lanes as drawn now (CSS px), for tests and tools: empty before a run. */
  lanes(): Lane[] {
    const { rowH } = this.geometry();
    let k = 0;
    return this.layout.lanes.map((l) => {
      const top = MARGIN.top + k * rowH;
      k += l.rows.length;
      return { node: l.node, top, bottom: MARGIN.top + k * rowH, rows: [...l.rows] };
    });
  }

  /** Left margin, CSS px: wide enough for the lane labels when there are lanes. */
  private left(): number {
    if (!this.labelled()) return MARGIN.left;
    const longest = Math.max(...this.layout.lanes.map((l) => (l.node ?? NO_NODE_LANE).length));
    return Math.max(MARGIN.left, 24 + Math.ceil(longest * 6.2));
  }

  private schedule() {
    cancelAnimationFrame(this.frame);
    this.frame = requestAnimationFrame(() => this.draw());
  }

  private maxUs(): number {
    if (!this.data) return 1;
    let max = this.data.totalUs;
    for (const r of this.data.results) max = Math.max(max, r.reply_us ?? 0, r.sent_us ?? 0);
    return Math.max(max, 1);
  }

  private geometry() {
    const w = this.canvas.clientWidth;
    const h = this.canvas.clientHeight;
    const left = this.left();
    const plotW = Math.max(w - left - MARGIN.right, 10);
    const plotH = Math.max(h - MARGIN.top - MARGIN.bottom, 10);
    const n = Math.max(this.data?.results.length ?? 1, 1);
    return { w, h, left, plotW, plotH, n, rowH: plotH / n, maxUs: this.maxUs() };
  }

  draw() {
    const dpr = window.devicePixelRatio || 1;
    const { w, h, left, plotW, plotH, n, rowH, maxUs } = this.geometry();
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    const ctx = this.canvas.getContext('2d');
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    ctx.font = '11px system-ui, sans-serif';
    ctx.fillStyle = '#5f6368';
    if (!this.data || this.data.results.length === 0) {
      ctx.fillText('Run a batch to see when each command was sent and answered.', 8, MARGIN.top + 20);
      return;
    }
    const sx = (us: number) => left + (us / maxUs) * plotW;

    // Time axis with grid lines.
    const maxMs = maxUs / 1000;
    const step = niceStep(maxMs, Math.max(2, Math.floor(plotW / 90)));
    const tick = tickFormat(step);
    ctx.strokeStyle = '#e3e5e8';
    ctx.lineWidth = 1;
    ctx.textAlign = 'center';
    for (let k = 0; k * step <= maxMs + 1e-9; k++) {
      const t = k * step; // not a running sum: 0.1 + 0.2 drifts
      const x = Math.round(sx(t * 1000)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, MARGIN.top);
      ctx.lineTo(x, MARGIN.top + plotH);
      ctx.stroke();
      ctx.fillText(tick(t), x, h - MARGIN.bottom + 14);
    }
    ctx.fillText('time since the batch started (ms)', left + plotW / 2, h - 4);

    // Command axis: its ends, or each lane's node and command count.
    ctx.textAlign = 'right';
    if (this.labelled()) {
      ctx.strokeStyle = '#5f6368';
      for (const lane of this.lanes()) {
        const y = Math.round(lane.top) + 0.5;
        ctx.beginPath();
        ctx.moveTo(left - 4, y);
        ctx.lineTo(left + plotW, y);
        ctx.stroke();
        const mid = (lane.top + lane.bottom) / 2;
        ctx.fillText(lane.node ?? NO_NODE_LANE, left - 6, Math.max(mid - 1, lane.top + 10));
        if (lane.bottom - lane.top >= 26) ctx.fillText(`${lane.rows.length.toLocaleString('en-US')} cmds`, left - 6, mid + 12);
      }
    } else {
      ctx.fillText('#1', left - 6, MARGIN.top + 9);
      ctx.fillText(`#${n.toLocaleString('en-US')}`, left - 6, MARGIN.top + plotH);
    }
    ctx.save();
    ctx.translate(12, MARGIN.top + plotH / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = 'center';
    ctx.fillText(this.labelled() ? 'command, by cluster node' : 'command', 0, 0);
    ctx.restore();

    // The frame first, so it never covers the bars next to it.
    ctx.strokeStyle = '#9aa0a6';
    ctx.strokeRect(left + 0.5, MARGIN.top + 0.5, plotW, plotH);

    // Bars, one colour at a time.
    const gap = rowH > 4 ? 1 : 0;
    const barH = Math.max(rowH - gap, 1);
    for (const status of Object.keys(COLORS) as Status[]) {
      ctx.fillStyle = COLORS[status];
      ctx.beginPath();
      const results = this.data.results;
      const slot = this.layout.slot;
      for (let i = 0; i < results.length; i++) {
        const r = results[i];
        if (r.status !== status) continue;
        const y = MARGIN.top + slot[i] * rowH;
        if (r.sent_us == null) {
          // Never sent: a short grey mark at the end of the axis, so the row is not silently empty.
          ctx.rect(sx(maxUs) - 4, y, 4, barH);
          continue;
        }
        const x0 = sx(r.sent_us);
        const x1 = sx(r.reply_us ?? maxUs);
        ctx.rect(x0, y, Math.max(x1 - x0, MIN_BAR_PX), barH);
      }
      ctx.fill();
    }
  }

  private hover(e: MouseEvent) {
    if (!this.data || this.data.results.length === 0) return;
    const rect = this.canvas.getBoundingClientRect();
    const { rowH } = this.geometry();
    const y = e.clientY - rect.top - MARGIN.top;
    const k = Math.floor(y / rowH);
    const i = y < 0 || k >= this.order.length ? -1 : this.order[k];
    const r = this.data.results[i];
    if (!r) {
      this.tip.hidden = true;
      return;
    }
    const t = (us?: number | null) => (us == null ? '—' : `${fmtMs(us / 1000)} ms`);
    this.tip.textContent = `#${i + 1} ${this.data.label(i)} · sent ${t(r.sent_us)} → reply ${t(r.reply_us)} · ${r.status}${r.node ? ` · ${r.node}` : ''}`;
    this.tip.hidden = false;
    this.tip.style.left = `${Math.min(e.clientX - rect.left + 12, rect.width - 260)}px`;
    this.tip.style.top = `${e.clientY - rect.top + 12}px`;
  }
}
