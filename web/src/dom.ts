// One way to make an element in the page's scripts: a tag, its attributes
// (`class` included) and its children, text or nodes.

export function el<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...children);
  return e;
}

/** Boxes that scroll on a narrow screen: wide tables (`.scroll-box`), a lesson's result, RESP previews, the console. */
const SCROLL_BOXES = '.scroll-box, .lesson-result, .resp-preview, .export-preview, .prose pre, .console-log';

/**
 * Each box of SCROLL_BOXES under `root`, once its content overflows it:
 * reachable by keyboard (tabindex 0, so arrows scroll it), named for a
 * screen reader (a region labelled by its lesson or view) and marked
 * `data-scrolls` (x, y or xy) for the shadow and hint that show it scrolls
 * (style.css). A box that stops overflowing gives back the tab stop it was given.
 */
export function keyboardScrolling(root: HTMLElement = document.body): void {
  const watched = new WeakSet<Element>();
  const mark = (box: HTMLElement) => {
    if (!box.isConnected) return;
    const st = getComputedStyle(box);
    const x = box.scrollWidth > box.clientWidth + 1 && /auto|scroll/.test(st.overflowX);
    const y = box.scrollHeight > box.clientHeight + 1 && /auto|scroll/.test(st.overflowY);
    const axes = `${x ? 'x' : ''}${y ? 'y' : ''}`;
    if (axes) {
      box.dataset.scrolls = axes;
      // A box the page made focusable already (a lesson's example) keeps its own name.
      if (box.hasAttribute('tabindex')) return;
      box.tabIndex = 0;
      box.dataset.scrollTab = '';
      if (!box.hasAttribute('aria-label') && !box.hasAttribute('aria-labelledby')) {
        if (!box.hasAttribute('role')) box.setAttribute('role', 'region');
        const heading = box.closest('article, section')?.querySelector('h2, h3')?.textContent?.trim();
        const what = box.classList.contains('scroll-box') ? 'table' : box.classList.contains('lesson-result') ? 'result' : 'text';
        // Regions are told apart by their names: the second of a lesson's tables is "table 2".
        const base = `${heading ? `${heading}: ` : ''}${what}`;
        let label = base;
        for (let n = 2; document.querySelector(`[aria-label="${CSS.escape(label)}"]`); n++) label = `${base} ${n}`;
        box.setAttribute('aria-label', label);
      }
    } else {
      delete box.dataset.scrolls;
      if ('scrollTab' in box.dataset && document.activeElement !== box) {
        box.removeAttribute('tabindex');
        delete box.dataset.scrollTab;
      }
    }
  };
  const sizes = new ResizeObserver((entries) => {
    for (const e of entries) mark(e.target as HTMLElement);
  });
  let pending = new Set<HTMLElement>();
  let queued = false;
  const flush = () => {
    queued = false;
    for (const box of root.querySelectorAll<HTMLElement>(SCROLL_BOXES)) {
      if (watched.has(box)) continue;
      watched.add(box);
      sizes.observe(box); // its first report marks it
    }
    const now = pending;
    pending = new Set();
    for (const box of now) mark(box);
  };
  new MutationObserver((records) => {
    for (const r of records) {
      const t = r.target instanceof Element ? r.target : r.target.parentElement;
      if (!t || t.closest('.cm-editor')) continue; // the editors change on every key: never a scroll box
      const box = t.closest<HTMLElement>(SCROLL_BOXES);
      if (box) pending.add(box);
      if (!queued) {
        queued = true;
        requestAnimationFrame(flush);
      }
    }
  }).observe(root, { childList: true, subtree: true, characterData: true });
  flush();
}
