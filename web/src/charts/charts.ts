// Charts for the compare and sweep views and lesson 3, drawn by Chart.js
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
};

const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: n < 10 ? 2 : 0 });

/** Replaces the chart on `canvas` (a canvas holds one chart at a time). */
function draw(canvas: HTMLCanvasElement, config: ChartConfiguration): Chart {
  Chart.getChart(canvas)?.destroy();
  return new Chart(canvas, config);
}

export interface ModeBar {
  mode: string;
  value: number;
}

/**
 * Each bar's ratio to the smallest: "9.2× pipeline" (the smallest bar says
 * "smallest"), so that a 9× gap reads as 9× whatever the axis.
 */
export function ratioLabels(bars: ModeBar[]): string[] {
  const min = bars.reduce((m, b) => (b.value < m.value ? b : m), bars[0]);
  return bars.map((b) => {
    if (b === min || b.value === min.value) return 'smallest';
    if (min.value <= 0) return '';
    const r = b.value / min.value;
    return `${r.toLocaleString('en-US', { maximumFractionDigits: r < 10 ? 1 : 0 })}× ${min.mode}`;
  });
}

/**
 * One bar per mode on a linear axis (a log axis made a 9× gap look like
 * 3×), each labelled with its value and its ratio to the smallest. `log`:
 * a logarithmic axis instead, for values too far apart to see side by side.
 */
export function modeBarChart(canvas: HTMLCanvasElement, bars: ModeBar[], opts: { title: string; unit: string; log: boolean }): Chart {
  const ratios = ratioLabels(bars);
  canvas.setAttribute('role', 'img');
  canvas.setAttribute(
    'aria-label',
    `${opts.title}: ${bars.map((b) => `${b.mode} ${fmt(b.value)} ${opts.unit}`).join(', ')} (${bars.map((b, i) => `${b.mode} ${ratios[i]}`).join(', ')})`,
  );
  return draw(canvas, {
    type: 'bar',
    data: {
      labels: bars.map((b, i) => [b.mode, `${fmt(b.value)} ${b.value === 1 ? opts.unit.replace(/s$/, '') : opts.unit}`, ratios[i]]),
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
        x: { ticks: { maxRotation: 0, autoSkip: false } },
        y: {
          type: opts.log ? 'logarithmic' : 'linear',
          beginAtZero: true,
          title: { display: true, text: `${opts.title} (${opts.unit}${opts.log ? ', log scale' : ''})` },
          ticks: { maxTicksLimit: 6, callback: (v) => (!opts.log || Math.log10(Number(v)) % 1 === 0 ? fmt(Number(v)) : '') },
          // Half the power of ten below the smallest bar, so that a bar of exactly 1 still shows.
          ...(opts.log ? { min: 10 ** Math.floor(Math.log10(Math.max(1e-3, Math.min(...bars.map((b) => b.value))))) / 2 } : {}),
        },
      },
    },
  });
}

export interface SweepSeries {
  label: string;
  /** [batch size, commands/s] */
  points: Array<[number, number]>;
  color?: string;
}

/** Commands/s against batch size, both axes logarithmic. */
export function sweepChart(canvas: HTMLCanvasElement, series: SweepSeries[]): Chart {
  canvas.setAttribute('role', 'img');
  canvas.setAttribute(
    'aria-label',
    'Commands per second by pipeline batch size: ' +
      series.map((s) => `${s.label}: ${s.points.map(([b, c]) => `batch ${fmt(b)} → ${fmt(c)}/s`).join(', ')}`).join('; '),
  );
  const palette = ['#2f7ed8', '#d9363e', '#7b4fc9', '#2e9e5b', '#e8a317'];
  return draw(canvas, {
    type: 'line',
    data: {
      datasets: series.map((s, i) => ({
        label: s.label,
        data: s.points.map(([x, y]) => ({ x, y })),
        borderColor: s.color ?? palette[i % palette.length],
        backgroundColor: s.color ?? palette[i % palette.length],
        pointRadius: 4,
      })),
    },
    options: {
      animation: false,
      maintainAspectRatio: false,
      parsing: false,
      plugins: {
        tooltip: { callbacks: { label: (c) => `batch ${fmt(c.parsed.x ?? 0)}: ${fmt(c.parsed.y ?? 0)} commands/s` } },
      },
      scales: {
        x: { type: 'logarithmic', title: { display: true, text: 'batch size (commands per round trip, log scale)' }, ticks: { maxRotation: 0, callback: (v) => (Math.log10(Number(v)) % 1 === 0 ? fmt(Number(v)) : '') } },
        y: { type: 'logarithmic', title: { display: true, text: 'commands/s (log scale)' }, ticks: { callback: (v) => (Math.log10(Number(v)) % 1 === 0 ? fmt(Number(v)) : '') } },
      },
    },
  });
}
