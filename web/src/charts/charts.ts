// Charts for the compare view, drawn by Chart.js (the sweep's: sweepModel.ts)
// (only the parts used are registered, so the bundle stays small).
// Animation is off: the numbers are measurements, not a show, and
// screenshots in the end-to-end tests must be stable.
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  LogarithmicScale,
  PointElement,
  Tooltip,
  type ChartConfiguration,
} from 'chart.js';

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LogarithmicScale, LineController, LineElement, PointElement, Tooltip, Legend);

/** Red is the timeline's "error": no mode gets it. */
export const MODE_COLORS: Record<string, string> = {
  sequential: '#4a5a70',
  pipeline: '#2f7ed8',
  transaction: '#7b4fc9',
  auto: '#2e9e5b',
};

export const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: n < 10 ? 2 : 0 });

/** The chart drawn on `canvas`, if any (the page's tests read its scales). */
export const chartOf = (canvas: HTMLCanvasElement): Chart | undefined => Chart.getChart(canvas);

/** The 1, 2, 5 steps of a decade. */
const STEPS = [1, 2, 5];
const nice = (v: number) => Number(v.toPrecision(6));

/** The 1-2-5 value at or below `v` (`up`: at or above): where a log axis starts or ends. */
export function niceBound(v: number, up: boolean): number {
  const e = Math.floor(Math.log10(v));
  const cands = [...STEPS.map((m) => m * 10 ** (e - 1)), ...STEPS.map((m) => m * 10 ** e), 10 ** (e + 1)].map(nice);
  return up ? cands.find((c) => c >= v * (1 - 1e-9))! : [...cands].reverse().find((c) => c <= v * (1 + 1e-9))!;
}

/** Ticks at 1, 2 and 5 times each power of ten from `min` to `max`: a log axis with a label every step a reader can use. */
export function logTicks(min: number, max: number): number[] {
  if (!(min > 0) || !(max >= min)) return [];
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
    for (const m of STEPS) {
      const v = nice(m * 10 ** e);
      if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) out.push(v);
    }
  }
  return out;
}

/** A tick's number, short: 0.05, 2, 500, 2k, 10k, 1M. */
export function shortNumber(v: number): string {
  if (v >= 1e6) return `${nice(v / 1e6).toLocaleString('en-US')}M`;
  if (v >= 1e4) return `${nice(v / 1e3).toLocaleString('en-US')}k`;
  return nice(v).toLocaleString('en-US', { maximumSignificantDigits: 6 });
}

/**
 * A logarithmic axis people can read: it starts and ends on a 1-2-5 value
 * around the data and has a tick at each 1, 2 and 5 between (Chart.js's own
 * log ticks left one label, "1", on an axis of 0.3 to 4 ms), each with `unit`.
 */
export function readableLogAxis(unit = '') {
  return {
    type: 'logarithmic' as const,
    afterDataLimits: (axis: { min: number; max: number }) => {
      if (axis.min > 0 && axis.max > 0) {
        axis.min = niceBound(axis.min, false);
        axis.max = niceBound(axis.max, true);
      }
    },
    afterBuildTicks: (axis: { min: number; max: number; ticks: Array<{ value: number }> }) => {
      axis.ticks = logTicks(axis.min, axis.max).map((value) => ({ value }));
    },
    ticks: { callback: (v: string | number) => `${shortNumber(Number(v))}${unit}` },
  };
}

/** The plot's least height, px: a phone's narrow legend (a row per line) must not squeeze it flat, nor cut its axis titles. */
export const MIN_PLOT_PX = 220;
/** A chart's box never grows past this, px. */
const MAX_BOX_PX = 1000;

/**
 * Grows the chart's box (its canvas's parent, which sets the chart's size)
 * until the plot is MIN_PLOT_PX tall whatever the legend takes: Chart.js
 * then redraws at the new size by itself.
 */
const roomy = {
  id: 'roomy',
  afterLayout(chart: Chart) {
    const box = chart.canvas.parentElement;
    const area = chart.chartArea;
    if (!box || !area || box.clientHeight === 0) return;
    const lack = MIN_PLOT_PX - (area.bottom - area.top);
    if (lack > 1 && box.clientHeight < MAX_BOX_PX) box.style.height = `${Math.min(MAX_BOX_PX, box.getBoundingClientRect().height + lack)}px`;
  },
};

/** Replaces the chart on `canvas` (a canvas holds one chart at a time). */
export function draw(canvas: HTMLCanvasElement, config: ChartConfiguration): Chart {
  Chart.getChart(canvas)?.destroy();
  return new Chart(canvas, { ...config, plugins: [...(config.plugins ?? []), roomy] });
}

export interface ModeBar {
  mode: string;
  value: number;
}

/**
 * Each bar against the baseline, the first bar (sequential, as the table's
 * "speedup vs sequential"): "27× faster than sequential" for a smaller
 * value (`less` names what smaller means), "2× slower" for a larger one;
 * the baseline's own bar says "baseline".
 */
export function baselineLabels(bars: ModeBar[], less: string, more: string): string[] {
  const base = bars[0];
  return bars.map((b, i) => {
    if (i === 0 || !base) return 'baseline';
    if (b.value <= 0 || base.value <= 0) return '';
    const r = base.value >= b.value ? base.value / b.value : b.value / base.value;
    const x = `${r.toLocaleString('en-US', { maximumFractionDigits: r < 10 ? 1 : 0 })}×`;
    if (x === '1×') return `same as ${base.mode}`;
    return `${x} ${base.value >= b.value ? less : more} than ${base.mode}`;
  });
}

/** Bars further apart than this (largest / smallest) go on a log axis, or the small ones vanish. */
export const LOG_ABOVE = 20;

/**
 * One bar per mode, each labelled with its value and its ratio to the
 * baseline (the first bar). A linear axis while the bars are within
 * LOG_ABOVE× of each other (a log axis made a 9× gap look like 3×); past
 * that a logarithmic one (said in the axis title), so that a pipeline 600×
 * faster than sequential is still a bar and not a hairline. The canvas's
 * `data-scale` says which.
 */
export function modeBarChart(canvas: HTMLCanvasElement, bars: ModeBar[], opts: { title: string; unit: string; less: string; more: string }): Chart {
  const ratios = baselineLabels(bars, opts.less, opts.more);
  const base = bars[0]?.mode ?? 'the first';
  const values = bars.map((b) => b.value).filter((v) => v > 0);
  const log = values.length > 1 && Math.max(...values) / Math.min(...values) > LOG_ABOVE;
  canvas.dataset.scale = log ? 'log' : 'linear';
  canvas.setAttribute('role', 'img');
  canvas.setAttribute(
    'aria-label',
    `${opts.title}: ${bars.map((b) => `${b.mode} ${fmt(b.value)} ${opts.unit}`).join(', ')} (${bars.map((b, i) => `${b.mode} ${ratios[i]}`).join(', ')})`,
  );
  return draw(canvas, {
    type: 'bar',
    data: {
      // Under each bar its ratio without "than sequential": the axis title says it once.
      // A count whose unit is the chart's title ("round trips") goes bare.
      labels: bars.map((b, i) => [b.mode, opts.unit === opts.title ? fmt(b.value) : `${fmt(b.value)} ${opts.unit}`, ratios[i]!.replace(` than ${base}`, '')]),
      datasets: [{ label: opts.title, data: bars.map((b) => b.value), backgroundColor: bars.map((b) => MODE_COLORS[b.mode] ?? '#888') }],
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      plugins: {
        legend: { display: false },
        tooltip: { callbacks: { label: (c) => `${fmt(c.parsed.y ?? 0)} ${opts.unit}` } },
      },
      scales: {
        x: { ticks: { maxRotation: 0, autoSkip: false, font: { size: 11 } }, title: { display: true, text: `ratio to ${base}, the baseline` } },
        y: {
          type: log ? 'logarithmic' : 'linear',
          beginAtZero: true,
          title: { display: true, text: opts.unit === opts.title ? `${opts.title}${log ? ' (log scale)' : ''}` : `${opts.title} (${opts.unit}${log ? ', log scale' : ''})` },
          ticks: { maxTicksLimit: 6, callback: (v) => (!log || Math.log10(Number(v)) % 1 === 0 ? fmt(Number(v)) : '') },
          // Half the power of ten below the smallest bar, so that a bar of exactly 1 still shows.
          ...(log ? { min: 10 ** Math.floor(Math.log10(Math.max(1e-3, Math.min(...values)))) / 2 } : {}),
        },
      },
    },
  });
}
