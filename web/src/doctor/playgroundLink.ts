// "Open in playground": a permalink (../permalink.ts, `#s=…`) to the
// playground page of a `pipelab serve` (the doctor's `--playground-url`),
// holding the missed pipeline's shape as a batch, opened on the Compare view
// at the doctor's `--rtt` (the playground's RTT and Compare's both), where
// one click runs it sequentially, as a pipeline and as MULTI/EXEC.
import { encodePermalink } from '../permalink.js';
import type { Missed } from './types.js';

export async function playgroundLink(playgroundUrl: string, m: Missed): Promise<string> {
  const fragment = await encodePermalink({
    text: m.example,
    mode: 'sequential',
    batch_size: 1000,
    on_error: 'continue',
    simulated_rtt_ms: m.rtt_ms,
    view: 'compare',
    compare: { simulated_rtt_ms: m.rtt_ms },
  });
  return playgroundUrl.replace(/#.*$/, '') + fragment;
}
