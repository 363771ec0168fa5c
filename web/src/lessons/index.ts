// Mounts the tutorial, the compare and sweep views, the tabs and the share
// bar (permalink, export) around the playground, and restores a permalink.
import type { Editors } from '../editor/views.js';
import { permalinkButton, shareBar } from '../export/panel.js';
import { runHistory } from '../results/history.js';
import { keyBrowser } from '../results/keys.js';
import { applyInputs, decodePermalink, encodePermalink, inputsOf, placeIn, scrollToPlace, type PageState } from '../permalink.js';
import { PlaygroundState } from './bridge.js';
import { compareView } from './compareView.js';
import { sweepView } from './sweepView.js';
import { Tabs, VIEWS, type ViewName } from './tabs.js';
import { tutorialView } from './tutorialView.js';
import { el } from './ui.js';
import './tutorial.css';

/** `redis`: the Redis the server runs batches on (/info's `redis.target`), for the exports. */
export async function mountTutorial(opts: { editors: Editors; redis?: () => string | null }): Promise<void> {
  const state = new PlaygroundState(opts.editors);
  // The playground's panel sits inside <main> with the other views, so every view keeps the main landmark.
  const main = document.getElementById('playground-view') ?? document.querySelector('main')!;
  main.id ||= 'playground-view';
  let tabs: Tabs | null = null;
  const tutorial = tutorialView({
    loadExample(s) {
      state.set(s);
      tabs?.show('playground');
      window.scrollTo({ top: 0 });
    },
  });
  const compare = compareView(state);
  const sweep = sweepView();
  main.after(tutorial, compare.root, sweep.root);
  const panels = { playground: main, tutorial, compare: compare.root, sweep: sweep.root };
  tabs = new Tabs(panels);
  (document.querySelector('header') ?? main).after(tabs.nav);

  // Everything the reader set: the playground, each view's settings, every
  // lesson's controls and the export menus, the open view and the place in it.
  const pageState = (): PageState => {
    const place = placeIn(panels[tabs!.view], tabs!.nav.getBoundingClientRect().bottom);
    return {
      ...state.get(),
      view: tabs!.view,
      compare: compare.settings(),
      sweep: sweep.settings(),
      inputs: inputsOf([tutorial, document.getElementById('export-target'), document.getElementById('export-mode')]),
      ...(place ? { place } : {}),
    };
  };
  const link = permalinkButton(pageState);
  tabs.nav.append(link.button);
  tabs.nav.after(link.status);
  tabs.onShow(link.clear);
  // A permalink in the address bar follows the open view: a reload must not go back to the tab it was copied on.
  let restoring = false;
  tabs.onShow(() => {
    if (restoring || !location.hash.startsWith('#s=')) return;
    setTimeout(() => void encodePermalink(pageState()).then((f) => location.hash.startsWith('#s=') && history.replaceState(null, '', f)), 0);
  });
  // The key browser and the run history close the playground: what its batches left behind, and how they went.
  main.append(keyBrowser(), runHistory());
  const share = shareBar({ state: () => state.get(), commands: () => opts.editors.snapshot().commands, onBatchChange: (l) => opts.editors.onChange(l), redis: opts.redis });
  (document.getElementById('controls') ?? main.firstElementChild ?? main).after(share);

  // Restore a permalink: editor text, mode, options, the open view and the
  // views' settings; again when only the fragment changes (a link pasted
  // into the address bar of an open page does not reload it).
  const notice = el('p', { class: 'message error', id: 'permalink-error', role: 'alert' });
  const restore = async (opening: boolean) => {
    notice.remove();
    restoring = true;
    try {
      const s = await decodePermalink(location.hash);
      if (!s) return;
      state.set(s);
      if (s.compare) compare.apply(s.compare);
      if (s.sweep) sweep.apply(s.sweep);
      if (s.inputs) applyInputs(s.inputs);
      if (s.view && VIEWS.some(([v]) => v === s.view)) tabs!.show(s.view as ViewName);
      else if (s.view && /^lesson-\d+$/.test(s.view) && document.getElementById(s.view)) {
        tabs!.show('tutorial');
        document.getElementById(s.view)?.scrollIntoView();
      }
      if (s.place) scrollToPlace(s.place, tabs!.nav);
    } catch (e) {
      const kept = opening ? 'The default batch was loaded instead.' : 'The page keeps the batch it had.';
      notice.textContent = `Could not open the permalink: ${(e as Error).message}. ${kept}`;
      tabs!.nav.after(notice);
    } finally {
      restoring = false;
    }
  };
  addEventListener('hashchange', () => void restore(false));
  await restore(true);
}
