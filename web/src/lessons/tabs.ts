// Tabs over the page's views, all inside <main>: the playground
// (index.html's #playground-view), the tutorial, compare and sweep. The open view is part of the permalink.
import { el } from './ui.js';

export type ViewName = 'playground' | 'tutorial' | 'compare' | 'sweep';
export const VIEWS: Array<[ViewName, string]> = [
  ['playground', 'Playground'],
  ['tutorial', 'Tutorial'],
  ['compare', 'Compare modes'],
  ['sweep', 'Batch-size sweep'],
];

export class Tabs {
  readonly nav: HTMLElement;
  private current: ViewName = 'playground';
  private buttons = new Map<ViewName, HTMLButtonElement>();
  private listeners: Array<(view: ViewName) => void> = [];

  constructor(private panels: Record<ViewName, HTMLElement>) {
    // The tablist holds the tabs only; the nav holds it and, after it, Copy permalink.
    const list = el('div', { class: 'tablist', role: 'tablist', 'aria-label': 'Views' });
    this.nav = el('nav', { class: 'tabs', id: 'tabs', 'aria-label': 'Views and permalink' }, list);
    for (const [name, label] of VIEWS) {
      const b = el('button', { type: 'button', role: 'tab', id: `tab-${name}`, 'data-view': name, 'aria-controls': panels[name].id }, label);
      b.addEventListener('click', () => this.show(name));
      this.buttons.set(name, b);
      list.append(b);
      panels[name].setAttribute('role', 'tabpanel');
      panels[name].setAttribute('aria-labelledby', b.id);
    }
    // The WAI-ARIA tabs pattern: one tab stop (the selected tab); arrows,
    // Home and End move between the tabs and show the one reached.
    list.addEventListener('keydown', (e) => {
      const names = VIEWS.map(([n]) => n);
      const at = names.indexOf(this.current);
      const to = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: names.length - 1 }[e.key];
      if (to === undefined || e.altKey || e.ctrlKey || e.metaKey) return;
      e.preventDefault();
      const name = names[(to + names.length) % names.length]!;
      this.show(name);
      this.buttons.get(name)?.focus();
    });
    this.show('playground');
  }

  get view(): ViewName {
    return this.current;
  }

  /** Calls `listener` each time a view is shown. */
  onShow(listener: (view: ViewName) => void): void {
    this.listeners.push(listener);
  }

  show(name: ViewName): void {
    this.current = name;
    for (const l of this.listeners) l(name);
    for (const [n, panel] of Object.entries(this.panels) as Array<[ViewName, HTMLElement]>) {
      panel.hidden = n !== name;
      this.buttons.get(n)?.setAttribute('aria-selected', String(n === name));
      this.buttons.get(n)?.setAttribute('tabindex', n === name ? '0' : '-1');
    }
  }
}
