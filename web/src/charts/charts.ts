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

/** Replaces the chart on `canvas` (a canvas holds one chart at a time). */
export function draw(canvas: HTMLCanvasElement, config: ChartConfiguration): Chart {
  Chart.getChart(canvas)?.destroy();
  return new Chart(canvas, config);
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
