// The playground's wiring: editors (wasm only, work offline), run controls
// (playground/controls.ts), the run flow (playground/run.ts) and its
// results as a summary, a timeline and a table; the tutorial around it.
import { keymap } from '@codemirror/view';
import { Prec } from '@codemirror/state';
import { fetchInfo } from './api/client.js';
import { showSandbox } from './playground/sandbox.js';
import { showServer } from './playground/serverName.js';
import { createEditors } from './editor/views.js';
import { ResultsTable } from './results/table.js';
import { sample } from './samples.js';
import { Timeline } from './timeline/timeline.js';
import * as wasm from './wasm.js';
import * as respText from './editor/respText.js';
import { mountTutorial } from './lessons/index.js';
import { refreshHealth, showStartFailure } from './playground/banner.js';
import { applyLimits, bandwidthMbps, currentMode, fitBatchSize, limitsOf, updateWarning, wireControls, type ServerLimits } from './playground/controls.js';
import { refusedIn, refusedWarning, type RefusedList } from './playground/refused.js';
import { arityIn, arityWarning } from './playground/arity.js';
import { CommandBook, commandHelp } from './editor/commandHelp.js';
import { commandDocs } from './api/client.js';
import { runner } from './playground/run.js';
import { fmtDuration } from './playground/duration.js';
import { mountInteractive } from './interactive/console.js';
import { mountTokenField } from './playground/tokenField.js';
import { chartOf } from './charts/charts.js';
import { keyboardScrolling } from './dom.js';
import { floatRun } from './playground/floatingRun.js';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

async function main() {
  await wasm.loadWasm();
  const timeline = new Timeline($<HTMLCanvasElement>('timeline'), $<HTMLElement>('timeline-tip'));
  const table = new ResultsTable($<HTMLElement>('results'), $<HTMLElement>('detail'));
  timeline.set(null);

  // The server's limits arrive from GET /api/v1/info; until then (or if it
  // never answers) the page checks none of them.
  let limits: ServerLimits = {};
  let run: () => Promise<boolean> = async () => true;
  // The server's commands (GET /api/v1/commands), for completion, hover and the arity check.
  const book = new CommandBook();
  const runKeys = Prec.highest(keymap.of([{ key: 'Mod-Enter', run: () => (void run(), true) }]));
  const editors = createEditors({
    inlineParent: $('inline-editor'),
    respParent: $('resp-editor'),
    inlineStatus: $('inline-status'),
    respStatus: $('resp-status'),
    initial: sample('demo')!,
    extraKeys: runKeys,
    help: commandHelp(book),
  });
  const batchRun = runner({ editors, timeline, table, runButton: $<HTMLButtonElement>('run'), limits: () => limits });
  // The interactive toggle's console runs one command at a time on a session; the batch Run rests meanwhile.
  const interactive = mountInteractive({
    settings: () => ({ simulated_rtt_ms: Number($<HTMLInputElement>('rtt').value), simulated_bandwidth_mbps: bandwidthMbps(), resp3: $<HTMLInputElement>('resp3').checked }),
  });
  run = () => (interactive.active() ? Promise.resolve(true) : batchRun());
  // Expose for tests and the console.
  (window as unknown as { pipelab: unknown }).pipelab = { editors, run, wasm, respText, fmtDuration, timeline, chartOf };

  // The commands this server refuses whatever their arguments (/info's `refused`).
  let refusedList: RefusedList = [];
  const warn = () => {
    const snap = editors.snapshot();
    fitBatchSize(limits, snap.commands);
    const hits = refusedIn(refusedList, snap, currentMode());
    const arity = arityIn(book, snap);
    editors.markRefused(new Map([...arity, ...hits].map((h) => [h.index, h.message])));
    updateWarning(limits, () => snap.commands, refusedWarning(hits), arityWarning(arity));
  };
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey) && !e.defaultPrevented) {
      e.preventDefault();
      void run();
    }
  });
  wireControls(() => void run(), warn);
  keyboardScrolling();
  floatRun($('run'), () => [$('controls'), $('summary'), document.getElementById('tabs')]);
  // The menu shows the sample loaded until the batch is edited, then "choose…" again.
  const sampleMenu = $<HTMLSelectElement>('sample');
  let loaded: string | null = null;
  sampleMenu.addEventListener('change', () => {
    loaded = sample(sampleMenu.value);
    if (loaded !== null) editors.setInline(loaded);
  });
  editors.onChange(() => {
    if (loaded !== null && editors.snapshot().inlineText !== loaded) {
      loaded = null;
      sampleMenu.value = '';
    }
  });
  editors.onChange(warn);
  warn();
  // Tutorial, compare and sweep views, share bar; restores a permalink.
  let redisTarget: string | null = null;
  const mounted = mountTutorial({ editors, redis: () => redisTarget });
  // The server's limits and refusals for this caller (again once a token is given).
  const loadInfo = async () => {
    const info = await fetchInfo();
    limits = limitsOf(info);
    refusedList = info?.refused ?? [];
    // Once per server: completion and the arity check wait for it, the page does not.
    if (info && book.size === 0) {
      void commandDocs()
        .then((d) => {
          book.load(d.commands);
          warn();
        })
        .catch(() => {
          /* no docs: no completion, and Redis checks the arity */
        });
    }
    redisTarget = info?.redis.target ?? null;
    showSandbox(info);
    showServer(info);
    await mounted; // the tutorial's inputs exist
    applyLimits(limits);
    warn();
    return info !== null;
  };
  mountTokenField($('banner'), loadInfo);
  void loadInfo();
  await mounted;
  // The pinned tab bar's height (it wraps on a phone), for what is placed under it (style.css).
  const nav = document.getElementById('tabs');
  if (nav) new ResizeObserver(() => document.documentElement.style.setProperty('--tabs-height', `${nav.offsetHeight}px`)).observe(nav);

  await refreshHealth();
  setInterval(() => {
    if (document.visibilityState === 'visible') void refreshHealth();
  }, 5000);
}

main().catch((e) => {
  showStartFailure(e as Error);
  console.error(e);
});
