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
