// One connection's flights on a time axis (SVG): a bar per round trip from
// its first command to its last reply, its height and colour by depth
// (commands in the flight; single-command flights in the "missed" colour).
// The axis spans the flights kept (the doctor keeps the most recent of each
// connection), so a gap between bars is the client's own time.
import type { Flight } from './types.js';

const NS = 'http://www.w3.org/2000/svg';
const W = 1000;
const H = 36;

function svgEl(tag: string, attrs: Record<string, string | number>): SVGElement {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

export function timeline(flights: Flight[]): SVGSVGElement {
  const svg = svgEl('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img', class: 'flights', 'data-flights': flights.length }) as SVGSVGElement;
  if (flights.length === 0) return svg;
  const t0 = flights[0].start_us;
  const t1 = Math.max(...flights.map((f) => f.start_us + f.wait_us));
  const span = Math.max(1, t1 - t0);
  const title = svgEl('title', {});
  title.textContent = `${flights.length} flights over ${(span / 1000).toFixed(2)} ms`;
  svg.append(title);
  for (const f of flights) {
    const h = Math.min(H, 8 + 7 * Math.log10(f.commands));
    const r = svgEl('rect', {
      x: ((f.start_us - t0) / span) * W,
      y: H - h,
      width: Math.max(1, (f.wait_us / span) * W),
      height: h,
      fill: f.commands > 1 ? 'var(--accent)' : 'var(--unknown)',
      'data-commands': f.commands,
    });
    const tip = svgEl('title', {});
    tip.textContent = `${f.pattern}: ${f.commands} command${f.commands === 1 ? '' : 's'}, waited ${f.wait_us} µs${f.think_us === null ? '' : `, after ${f.think_us} µs of client time`}`;
    r.append(tip);
    svg.append(r);
  }
  return svg;
}
