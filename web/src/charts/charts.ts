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

export const MODE_COLORS: Record<string, string> = {
  sequential: '#d9363e',
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
 * One bar per mode. `log`: a logarithmic y axis, so a 1 000 ms sequential
 * bar and a 2 ms pipeline bar are both readable.
 */
export function modeBarChart(canvas: HTMLCanvasElement, bars: ModeBar[], opts: { title: string; unit: string; log: boolean }): Chart {
  canvas.setAttribute('role', 'img');
  canvas.setAttribute('aria-label', `${opts.title}: ${bars.map((b) => `${b.mode} ${fmt(b.value)} ${opts.unit}`).join(', ')}`);
  return draw(canvas, {
    type: 'bar',
    data: {
      labels: bars.map((b) => [b.mode, `${fmt(b.value)} ${b.value === 1 ? opts.unit.replace(/s$/, '') : opts.unit}`]),
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
        y: {
          type: opts.log ? 'logarithmic' : 'linear',
          title: { display: true, text: `${opts.title} (${opts.unit}${opts.log ? ', log scale' : ''})` },
          ticks: { callback: (v) => (!opts.log || Math.log10(Number(v)) % 1 === 0 ? fmt(Number(v)) : '') },
          // Half the power of ten below the smallest bar, so that a bar of exactly 1 still shows.
          ...(opts.log ? { min: 10 ** Math.floor(Math.log10(Math.max(1e-3, Math.min(...bars.map((b) => b.value))))) / 2 } : {}),
        },
      },
    },
  });
}
