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

export async function mountTutorial(opts: { editors: Editors }): Promise<void> {
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
  main.after(tutorial, compare, sweep);
  tabs = new Tabs({ playground: main, tutorial, compare, sweep });
  (document.querySelector('header') ?? main).after(tabs.nav);

  tabs.nav.append(permalinkButton(() => ({ ...state.get(), view: tabs!.view })));
  const share = shareBar({ state: () => state.get(), commands: () => opts.editors.snapshot().commands, onBatchChange: (l) => opts.editors.onChange(l) });
  (document.getElementById('controls') ?? main.firstElementChild ?? main).after(share);

  // Restore a permalink: editor text, mode, options and the open view.
  const notice = el('p', { class: 'message error', id: 'permalink-error', role: 'alert' });
  try {
    const s = await decodePermalink(location.hash);
    if (s) {
      state.set(s);
      if (s.view && VIEWS.some(([v]) => v === s.view)) tabs.show(s.view as ViewName);
      else if (s.view && /^lesson-\d+$/.test(s.view) && document.getElementById(s.view)) {
        tabs.show('tutorial');
        document.getElementById(s.view)?.scrollIntoView();
      }
    }
  } catch (e) {
    notice.textContent = `Could not open the permalink: ${(e as Error).message}. The default batch was loaded instead.`;
    tabs.nav.after(notice);
  }
}
