// The run flow: check the batch and the controls, POST /api/v1/batches
// (results streamed while it runs, with progress and Cancel), show the
// summary, the timeline and the table, or why it did not run.
import type { ApiError } from '../api/client.js';
import { liveBatch } from '../api/live.js';
import type { Editors } from '../editor/views.js';
import type { ResultsTable } from '../results/table.js';
import type { Timeline } from '../timeline/timeline.js';
import { showBanner, refreshHealth } from './banner.js';
import { controlError, refusalShown, request, showControlError, type ServerLimits } from './controls.js';
import { showProgress } from './progress.js';
import { apiHint, clearSummaryMessage, renderSummary, summaryMessage } from './summary.js';
import { RUN_DONE } from '../results/history.js';

/** Least time between two redraws of a running batch's table and timeline, ms. */
const LIVE_REDRAW_MS = 200;
/** Most results whose timeline is redrawn while the batch runs (each redraw draws them all). */
const LIVE_TIMELINE_MAX = 20_000;

export interface RunParts {
  editors: Editors;
  timeline: Timeline;
  table: ResultsTable;
  runButton: HTMLButtonElement;
  /** The server's limits as known now (GET /api/v1/info). */
  limits: () => ServerLimits;
}

/** A `run()` that runs the editor's batch once at a time; it resolves true (handled) whatever the outcome. */
export function runner({ editors, timeline, table, runButton, limits }: RunParts): () => Promise<boolean> {
  /** No timeline or table of an earlier batch under a new error message. */
  const clearResults = () => {
    timeline.set(null);
    table.set(null, () => '');
  };
  const refuse = (message: string) => {
    clearResults();
    summaryMessage(message, 'error', 'refused');
    return true;
  };
  // A refusal is about the batch it refused: once that changes, its reason
  // leaves the summary (the warning above Run speaks of the batch as it is now).
  editors.onChange(() => clearSummaryMessage('refused'));

  let running = false;
  return async () => {
    // Ctrl+Enter too: the warning above Run already says why it would be refused.
    if (running || refusalShown()) return true;
    const snap = editors.snapshot();
    if (snap.respError) return refuse(`Fix the RESP view first: ${snap.respError}`);
    if (snap.inlineErrors > 0) return refuse('Fix the errors underlined in the inline view first.');
    if (snap.commands === 0) return refuse('Nothing to run: type a command, one per line.');
    const l = limits();
    if (l.maxCommands !== undefined && snap.commands > l.maxCommands) {
      return refuse(`Too many commands: ${snap.commands.toLocaleString('en-US')}; this server runs at most ${l.maxCommands.toLocaleString('en-US')} in one batch.`);
    }
    const bad = controlError(l);
    if (bad) return clearResults(), showControlError(bad), true;
    const req = request(snap);
    running = true;
    runButton.disabled = true;
    runButton.setAttribute('aria-busy', 'true');
    const label = (i: number) => (i < snap.commands ? snap.inlineText.slice(snap.textFrom[i], snap.textTo[i]) : '');
    clearResults();
    let frame = 0;
    let drawnAt = 0;
    const live = liveBatch(req, {
      results: (all) => {
        progress.update(all.length);
        // At most one redraw per LIVE_REDRAW_MS however fast results come (a
        // big pipeline's results arrive in a burst: drawn once, at the end).
        if (frame) return;
        const draw = () => {
          frame = requestAnimationFrame(() => {
            drawnAt = performance.now();
            if (all.length <= LIVE_TIMELINE_MAX) timeline.set({ results: all, totalUs: 0, label });
            table.grow(all, label);
            frame = 0;
          });
        };
        const wait = LIVE_REDRAW_MS - (performance.now() - drawnAt);
        // Too soon after the last redraw: one more when its time comes (frame
        // holds the timer's id meanwhile, so that later results wait for it).
        if (wait > 0) frame = window.setTimeout(draw, wait);
        else draw();
      },
    });
    /** No live redraw after the final one (frame is a timer or an animation frame). */
    const stopDrawing = () => {
      clearTimeout(frame);
      cancelAnimationFrame(frame);
      frame = -1;
    };
    const progress = showProgress(document.getElementById('summary') as HTMLElement, snap.commands, () => void live.cancel());
    try {
      const res = await live.done;
      progress.stop();
      stopDrawing();
      renderSummary(res, req.mode ?? 'pipeline', req.on_error ?? 'continue');
      // The run's history (../results/history.ts) keeps it for a later side-by-side.
      window.dispatchEvent(new CustomEvent(RUN_DONE, { detail: { request: req, summary: res.summary, first: label(0) } }));
      timeline.set({ results: res.results, totalUs: res.summary.total_us, label });
      table.set(res, label);
      showBanner('ok');
    } catch (e) {
      const err = e as ApiError;
      progress.stop();
      stopDrawing();
      clearResults();
      const refused = err.status >= 400 && err.status < 500;
      summaryMessage(`Run failed: ${err.message}${err.code ? ` (${err.code})` : ''}`, 'error', refused ? 'refused' : 'api', apiHint(err, req.mode ?? 'pipeline'));
      if (err.status === 0) showBanner('api_down');
      else if (err.status === 503) showBanner('redis_down', err.message);
      else void refreshHealth();
    } finally {
      running = false;
      runButton.disabled = refusalShown();
      runButton.removeAttribute('aria-busy');
    }
    return true;
  };
}
