// Timeline boxes for lessons: the playground's waterfall (timeline/timeline.ts)
// with a title, optionally several on one time axis so that their lengths
// compare directly.
import type { CommandResult } from '../api/client.js';
import { Timeline } from '../timeline/timeline.js';
import { el } from './ui.js';

export interface TimelineRun {
  title: string;
  /** The caption when the run is drawn on a longer run's axis, if it differs. */
  sharedTitle?: string;
  results: CommandResult[];
  totalUs: number;
  label: (i: number) => string;
}

/** One canvas per run, side by side; `sameAxis`: every axis ends at the longest run. */
export function timelines(runs: TimelineRun[], sameAxis: boolean): HTMLElement {
  const row = el('div', { class: 'lesson-timelines' });
  const maxUs = Math.max(...runs.map((r) => r.totalUs));
  const boxes: Array<{ t: Timeline; run: TimelineRun }> = [];
  for (const run of runs) {
    const canvas = el('canvas', { class: 'lesson-timeline' });
    const tip = el('div', { class: 'tip' });
    tip.hidden = true;
    const shared = sameAxis && run.totalUs < maxUs;
    row.append(el('figure', {}, el('figcaption', {}, (shared && run.sharedTitle) || run.title), el('div', { class: 'timeline-wrap' }, canvas, tip)));
    boxes.push({ t: new Timeline(canvas, tip), run });
  }
  // Draw once the canvases are in the document (they size from layout).
  requestAnimationFrame(() => {
    for (const { t, run } of boxes) t.set({ results: run.results, totalUs: sameAxis ? maxUs : run.totalUs, label: run.label });
  });
  return row;
}
