// The playground's Run on a phone's width: in the run controls when its
// place there is on screen; otherwise it floats at the bottom edge of the
// screen (the editor and the results are screens apart), or at the top edge
// when the bottom one would cover the run controls or the summary. When both
// edges would, it stays in its place: it never hides a field or a result.
import { el } from '../dom.js';

const PHONE = '(max-width: 760px)';
/** The floating button's distance from the screen's edge and its room around it, px. */
const MARGIN = 10;

export function floatRun(run: HTMLElement, keepClear: () => Array<Element | null>): void {
  // Holds Run's place in the form while it floats, so the form does not move under it.
  const home = el('span', { class: 'run-home', 'aria-hidden': 'true' });
  run.before(home);
  const phone = matchMedia(PHONE);
  let queued = false;
  const place = () => {
    queued = false;
    const dock = () => {
      run.classList.remove('floating');
      run.removeAttribute('data-edge');
      home.style.height = '';
      home.style.width = '';
    };
    if (!phone.matches || getComputedStyle(run).display === 'none') return dock();
    const floating = run.classList.contains('floating');
    const size = floating ? { h: home.offsetHeight, w: home.offsetWidth } : { h: run.offsetHeight, w: run.offsetWidth };
    const at = (floating ? home : run).getBoundingClientRect();
    const vh = window.innerHeight;
    if (at.top >= 0 && at.bottom <= vh) return dock();
    const strip = (top: number) => ({ top, bottom: top + size.h + MARGIN });
    const clear = (s: { top: number; bottom: number }) =>
      keepClear().every((e) => {
        if (!e || !(e as HTMLElement).offsetParent) return true;
        const r = e.getBoundingClientRect();
        return r.height === 0 || r.bottom <= s.top || r.top >= s.bottom;
      });
    const edge = clear(strip(vh - size.h - 2 * MARGIN)) ? 'bottom' : clear(strip(0)) ? 'top' : null;
    if (!edge) return dock();
    home.style.height = `${size.h}px`;
    home.style.width = `${size.w}px`;
    run.classList.add('floating');
    run.dataset.edge = edge;
  };
  const queue = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(place);
  };
  addEventListener('scroll', queue, { passive: true });
  addEventListener('resize', queue);
  phone.addEventListener('change', queue);
  new ResizeObserver(queue).observe(document.body);
  queue();
}
