// What the summary box shows while a batch runs: how many commands have a
// result, the time elapsed, an estimate of the time left (from the rate so
// far), and a Cancel button.
import { fmtDuration } from './duration.js';

export interface Progress {
  update: (done: number) => void;
  stop: () => void;
}

/** Renders into `el` now and every 250 ms until `stop()`. */
export function showProgress(el: HTMLElement, total: number, onCancel: () => void): Progress {
  const t0 = performance.now();
  let done = 0;
  const text = document.createElement('span');
  text.className = 'progress-text';
  const bar = document.createElement('progress');
  bar.max = total;
  bar.value = 0;
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.id = 'cancel-run';
  cancel.textContent = 'Cancel';
  cancel.addEventListener('click', () => {
    cancel.disabled = true;
    cancel.textContent = 'Cancelling…';
    onCancel();
  });
  const p = document.createElement('p');
  p.className = 'message info progress';
  p.append(text, bar, cancel);
  el.replaceChildren(p);
  const paint = () => {
    const elapsed = performance.now() - t0;
    const n = (x: number) => x.toLocaleString('en-US');
    let left = 'estimating…';
    if (done > 0 && done < total) left = `about ${fmtDuration((elapsed * (total - done)) / done)} left`;
    text.textContent = `Running ${n(total)} commands… ${n(done)} of ${n(total)} done · ${fmtDuration(elapsed)} elapsed · ${left}`;
    bar.value = done;
  };
  paint();
  const timer = setInterval(paint, 250);
  return {
    update: (d) => {
      done = d;
      paint();
    },
    stop: () => clearInterval(timer),
  };
}
