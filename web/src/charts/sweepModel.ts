// The sweep chart with its cost model: measured commands/s per
// batch size, the model T(b) = ⌈N/b⌉·RTT + N·t_cmd beside it (dashed, from
// the sweep report's fitted `model`), the knee marked (the smallest batch
// size within 10% of the plateau), and each batch size's reply latency p50
// and p99 on a second axis (ms): throughput and what each reply waits for it.
import type { ChartDataset } from 'chart.js';
import { modelRate, type SweepModel, type SweepPoint } from '../api/figures.js';
import { draw, fmt, readableLogAxis } from './charts.js';

export interface ModelSeries {
  label: string;
  /** Commands per run (the sweep's `total`). */
  total: number;
  points: SweepPoint[];
  /** The sweep's fitted model; none drawn when absent. */
  model?: SweepModel | null;
  /** The knee to mark, when the page measured its own (lessons/modelFacts.ts shownKnee); null: the curve shown has not flattened, none marked. By default the model's. */
  knee?: number | null;
}

const PALETTE = ['#2f7ed8', '#d9363e', '#7b4fc9', '#2e9e5b', '#e8a317'];

/** Batch sizes from `lo` to `hi`, `per` per power of ten, for drawing the model's curve. */
function logSpaced(lo: number, hi: number, per = 12): number[] {
  const out: number[] = [];
  for (let e = Math.log10(lo); e < Math.log10(hi); e += 1 / per) out.push(Math.max(1, Math.round(10 ** e)));
  out.push(hi);
  return [...new Set(out)];
}

/** The model's line, in words, for captions and the chart's aria-label. */
export function modelText(m: SweepModel, total: number, knee: number | null = m.knee_batch_size): string {
  const fit = m.fitted_on.length ? `t_cmd fitted by least squares on batch ${m.fitted_on.map(fmt).join(', ')}` : 't_cmd not fitted';
  const wire = m.wire_us_per_cmd ? ` + ${fmt(total)} × ${m.wire_us_per_cmd.toFixed(2)} µs on the wire (${fmt(Math.round(m.bytes_per_cmd ?? 0))} bytes at ${m.bandwidth_mbps} Mbit/s; bandwidth-delay product ${fmt(m.bdp_batch_size ?? 0)} commands)` : '';
  return `model T(b) = ⌈${fmt(total)}/b⌉ × ${fmt(m.rtt_ms)} ms + ${fmt(total)} × ${m.t_cmd_us.toFixed(2)} µs${wire} (${fit}), ${knee === null ? 'no knee: still rising at the largest batch size' : `knee at batch ${fmt(knee)}`}`;
}

/**
 * The two reply-latency lines, told apart in the legend's small swatch (an
 * open box drawn with the line's dashes) as on the chart: p50 long dashes
 * and squares, p99 dots and triangles.
 */
export const LATENCY_STYLE = {
  p50: { dash: [7, 3], width: 2, point: 'rect' },
  p99: { dash: [1, 3], width: 1.5, point: 'triangle' },
} as const;

export function sweepModelChart(canvas: HTMLCanvasElement, series: ModelSeries[]) {
  canvas.setAttribute('role', 'img');
  canvas.setAttribute(
    'aria-label',
    'Commands per second and reply latency by pipeline batch size: ' +
      series
        .map(
          (s) =>
            `${s.label}: ${s.points.map((p) => `batch ${fmt(p.batch_size)} → ${fmt(p.commands_per_sec)}/s` + (p.latency_us ? ` (p50 ${fmt(p.latency_us.p50 / 1000)} ms, p99 ${fmt(p.latency_us.p99 / 1000)} ms)` : '')).join(', ')}` +
            (s.model ? `; ${modelText(s.model, s.total, s.knee === undefined ? s.model.knee_batch_size : s.knee)}` : ''),
        )
        .join('; '),
  );
  const datasets: ChartDataset<'line'>[] = [];
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length]!;
    const sizes = s.points.map((p) => p.batch_size);
    datasets.push({ label: s.label, data: s.points.map((p) => ({ x: p.batch_size, y: p.commands_per_sec })), borderColor: color, backgroundColor: color, pointRadius: 4, yAxisID: 'y' });
    if (s.model && sizes.length > 0) {
      const m = s.model;
      datasets.push({
        label: `${s.label}: model (t_cmd ${m.t_cmd_us.toFixed(2)} µs)`,
        data: logSpaced(Math.min(...sizes), Math.max(...sizes))
          .map((b) => ({ x: b, y: modelRate(m, s.total, b) }))
          .filter((p) => Number.isFinite(p.y)),
        borderColor: color,
        backgroundColor: color,
        borderDash: [6, 4],
        borderWidth: 1.5,
        pointRadius: 0,
        yAxisID: 'y',
      });
      const kneeAt = s.knee === undefined ? m.knee_batch_size : s.knee;
      const knee = s.points.find((p) => p.batch_size === kneeAt);
      if (knee) {
        datasets.push({ label: `${s.label}: knee (batch ${fmt(knee.batch_size)})`, data: [{ x: knee.batch_size, y: knee.commands_per_sec }], borderColor: '#111', backgroundColor: '#ffd54a', pointStyle: 'triangle', pointRadius: 10, showLine: false, yAxisID: 'y' });
      }
    }
    const lat = s.points.filter((p) => p.latency_us);
    if (lat.length > 0) {
      for (const q of ['p50', 'p99'] as const) {
        const style = LATENCY_STYLE[q];
        datasets.push({
          label: `${s.label}: reply latency ${q} (ms, right axis)`,
          data: lat.map((p) => ({ x: p.batch_size, y: Math.max(1e-3, p.latency_us![q] / 1000) })),
          borderColor: color,
          backgroundColor: '#fff',
          borderDash: [...style.dash],
          borderWidth: style.width,
          pointStyle: style.point,
          pointRadius: 3.5,
          yAxisID: 'latency',
        });
      }
    }
  });
  // On a phone the x axis is narrower than its title on one line: two lines.
  const width = canvas.parentElement?.clientWidth ?? 0;
  const narrow = width > 0 && width < 560;
  return draw(canvas, {
    type: 'line',
    data: { datasets },
    options: {
      animation: false,
      maintainAspectRatio: false,
      parsing: false,
      plugins: {
        legend: { labels: { boxWidth: 18, font: { size: 11 } } },
        tooltip: { callbacks: { label: (c) => (c.dataset.yAxisID === 'latency' ? `${c.dataset.label}: ${fmt(c.parsed.y ?? 0)} ms at batch ${fmt(c.parsed.x ?? 0)}` : `${c.dataset.label}: batch ${fmt(c.parsed.x ?? 0)}: ${fmt(c.parsed.y ?? 0)} commands/s`) } },
      },
      scales: {
        x: { ...readableLogAxis(), title: { display: true, text: narrow ? ['batch size, log scale', '(commands per round trip)'] : 'batch size (commands per round trip, log scale)' }, ticks: { ...readableLogAxis().ticks, maxRotation: 0 } },
        y: { ...readableLogAxis('/s'), position: 'left', title: { display: true, text: 'commands/s (log scale)' } },
        latency: { ...readableLogAxis(' ms'), position: 'right', title: { display: true, text: 'reply latency, ms (log scale)' }, grid: { drawOnChartArea: false } },
      },
    },
  });
}
