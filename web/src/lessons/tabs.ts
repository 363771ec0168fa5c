// Tabs over the page's views: the playground (index.html's <main>), the
// tutorial, compare and sweep. The open view is part of the permalink.
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
    }
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
    }
  }
}
