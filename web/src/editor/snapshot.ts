// The batch as the editors hold it, read by the status line, the run
// controls and the refusal marks.

export interface BatchSnapshot {
  inlineText: string;
  commands: number;
  inlineErrors: number;
  respError: string | null;
  respBytes: number;
  /** Inline text of command i: inlineText.slice(textFrom[i], textTo[i]). */
  textFrom: Uint32Array;
  textTo: Uint32Array;
}
