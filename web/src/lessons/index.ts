// Mounts the tutorial, the compare and sweep views, the tabs and the share
// bar (permalink, export) around the playground, and restores a permalink.
import type { Editors } from '../editor/views.js';
import { permalinkButton, shareBar } from '../export/panel.js';
import { decodePermalink } from '../permalink.js';
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
  const main = document.querySelector('main')!;
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
  tabs = new Tabs({ playground: main, tutorial, compare: compare.root, sweep: sweep.root });
  (document.querySelector('header') ?? main).after(tabs.nav);

  const link = permalinkButton(() => ({ ...state.get(), view: tabs!.view, compare: compare.settings(), sweep: sweep.settings() }));
  tabs.nav.append(link.button);
  tabs.nav.after(link.status);
  tabs.onShow(link.clear);
  const share = shareBar({ state: () => state.get(), commands: () => opts.editors.snapshot().commands, onBatchChange: (l) => opts.editors.onChange(l), redis: opts.redis });
  (document.getElementById('controls') ?? main.firstElementChild ?? main).after(share);

  // Restore a permalink: editor text, mode, options, the open view and the
  // views' settings; again when only the fragment changes (a link pasted
  // into the address bar of an open page does not reload it).
  const notice = el('p', { class: 'message error', id: 'permalink-error', role: 'alert' });
  const restore = async (opening: boolean) => {
    notice.remove();
    try {
      const s = await decodePermalink(location.hash);
      if (!s) return;
      state.set(s);
      if (s.compare) compare.apply(s.compare);
      if (s.sweep) sweep.apply(s.sweep);
      if (s.view && VIEWS.some(([v]) => v === s.view)) tabs!.show(s.view as ViewName);
      else if (s.view && /^lesson-\d+$/.test(s.view) && document.getElementById(s.view)) {
        tabs!.show('tutorial');
        document.getElementById(s.view)?.scrollIntoView();
      }
    } catch (e) {
      const kept = opening ? 'The default batch was loaded instead.' : 'The page keeps the batch it had.';
      notice.textContent = `Could not open the permalink: ${(e as Error).message}. ${kept}`;
      tabs!.nav.after(notice);
    }
  };
  addEventListener('hashchange', () => void restore(false));
  await restore(true);
}
