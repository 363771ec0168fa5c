// The tutorial: the lessons in order, each a card with its claim, its
// explanation, "Load example" (into the playground) and "Run" (the
// experiment, against the reader's own Redis, numbers shown in the card).
import { lesson1 } from './lesson1.js';
import { lesson2 } from './lesson2.js';
import { lesson3 } from './lesson3.js';
import { lesson4 } from './lesson4.js';
import { lesson5 } from './lesson5.js';
import { lesson6 } from './lesson6.js';
import { lesson7 } from './lesson7.js';
import { lesson8 } from './lesson8.js';
import { lesson9 } from './lesson9.js';
import { lessonBandwidth } from './lessonBandwidth.js';
import { lessonApp } from './lessonApp.js';
import type { Bridge, Lesson } from './types.js';
import { el, errorBox, prose } from './ui.js';

/** The lessons in order: a lesson's number (`lesson-N`, its heading) is its place here, from 1. */
export const LESSONS: Lesson[] = [lesson1, lesson2, lesson3, lesson4, lesson5, lesson6, lesson7, lesson8, lesson9, lessonApp, lessonBandwidth];

function card(lesson: Lesson, n: number, bridge: Bridge): HTMLElement {
  const parts = lesson.build();
  const out = el('div', { class: 'lesson-result', 'aria-live': 'polite', 'data-state': 'idle' });
  const load = el('button', { type: 'button', class: 'load-example' }, 'Load example');
  const run = el('button', { type: 'button', class: 'run run-lesson' }, 'Run');
  load.addEventListener('click', () => bridge.loadExample(parts.example()));
  run.addEventListener('click', async () => {
    run.disabled = true;
    run.setAttribute('aria-busy', 'true');
    out.dataset.state = 'running';
    out.replaceChildren(el('p', { class: 'message info' }, 'Running on your Redis…'));
    try {
      await parts.run(out);
      out.dataset.state = 'done';
    } catch (e) {
      out.replaceChildren(errorBox(e));
      out.dataset.state = 'failed';
    } finally {
      run.disabled = false;
      run.removeAttribute('aria-busy');
    }
  });
  const id = `lesson-${n}`;
  // A long explanation goes beside the result: run first, read while it runs and after.
  const result = lesson.details
    ? el('div', { class: 'lesson-body' }, out, el('aside', { class: 'lesson-explain', 'aria-label': `Reading lesson ${n}'s result` }, el('h4', {}, 'Reading the result'), prose(lesson.details)))
    : out;
  return el(
    'article',
    { class: 'lesson', id, 'data-lesson': String(n), 'aria-labelledby': `${id}-title` },
    el('h3', { id: `${id}-title` }, `${n}. ${lesson.title}`),
    el('p', { class: 'claim' }, lesson.claim),
    prose(lesson.text),
    ...(parts.controls ? [el('div', { class: 'lesson-controls' }, parts.controls)] : []),
    ...(parts.panel ? [parts.panel] : []),
    el('div', { class: 'lesson-actions' }, load, ' ', run),
    result,
  );
}

/** "Ten" for 10: the count of lessons as the intro says it (the list decides it). */
export function countWord(n: number): string {
  const words = ['No', 'One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight', 'Nine', 'Ten', 'Eleven', 'Twelve'];
  return words[n] ?? String(n);
}

export function tutorialView(bridge: Bridge): HTMLElement {
  const toc = el('ol', { class: 'toc' }, ...LESSONS.map((l, i) => el('li', {}, el('a', { href: `#lesson-${i + 1}`, 'data-goto': String(i + 1) }, l.title))));
  toc.addEventListener('click', (e) => {
    const a = (e.target as HTMLElement).closest('a[data-goto]');
    if (!a) return;
    e.preventDefault(); // the fragment holds the permalink
    document.getElementById(`lesson-${a.getAttribute('data-goto')}`)?.scrollIntoView({ behavior: 'smooth' });
  });
  return el(
    'section',
    { id: 'tutorial-view', class: 'view tutorial', 'aria-labelledby': 'tutorial-title' },
    el('h2', { id: 'tutorial-title' }, 'Pipelining, measured on your Redis'),
    prose(`<p>${countWord(LESSONS.length)} short lessons. Each makes one claim and measures it with one click on the Redis
      behind this page; no number below is written in advance. "Load example" puts the lesson's
      batch into the playground to play with. Keys are prefixed <code>tut:</code>.</p>`),
    toc,
    ...LESSONS.map((l, i) => card(l, i + 1, bridge)),
  );
}
