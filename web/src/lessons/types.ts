import type { PageState } from '../permalink.js';

/** How a lesson reaches the playground. */
export interface Bridge {
  /** Puts a batch and its options into the playground editor and controls, and shows the playground. */
  loadExample(state: Partial<PageState>): void;
}

/** What a lesson's card is built from, besides its text. */
export interface LessonParts {
  /** The lesson's own knobs (RTT slider, sizes), if any. */
  controls?: HTMLElement;
  /** A panel of its own under the knobs, drawn by the lesson (lesson 10's live doctor). */
  panel?: HTMLElement;
  /** The batch that "Load example" puts into the playground, at the current knob values. */
  example(): Partial<PageState>;
  /** Runs the lesson's experiment against the reader's Redis and shows its numbers in `out`. */
  run(out: HTMLElement): Promise<void>;
}

/** One lesson: one claim, measured by one click. Its number is its place in `LESSONS` (tutorialView.ts). */
export interface Lesson {
  title: string;
  /** The claim, one sentence; the run checks it on the reader's deployment. */
  claim: string;
  /** The explanation: HTML, constant prose written for pipelab (never user or Redis data). */
  text: string;
  /**
   * How to read the result, when it is long: HTML as `text`, shown beside the
   * result (under it on a narrow screen), so that `text` stays short and Run
   * comes first.
   */
  details?: string;
  build(): LessonParts;
}
