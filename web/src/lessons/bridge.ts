// The playground's state as the permalink and the lessons see it: the inline
// editor's text and the run controls (ids in index.html). Setting a control
// fires the same events a person would, so the playground's own listeners
// (enabling the batch size, highlighting RTT presets) run as usual.
import type { Editors } from '../editor/views.js';
import type { Mode, OnError, PageState } from '../permalink.js';

const byId = <T extends HTMLElement>(id: string) => document.getElementById(id) as T | null;

export class PlaygroundState {
  constructor(private editors: Editors) {}

  get(): PageState {
    const mode = (document.querySelector<HTMLInputElement>('input[name="mode"]:checked')?.value ?? 'pipeline') as Mode;
    return {
      text: this.editors.snapshot().inlineText,
      mode,
      batch_size: Number(byId<HTMLInputElement>('batch-size')?.value ?? 1000) || 1000,
      on_error: (byId<HTMLSelectElement>('on-error')?.value ?? 'continue') as OnError,
      simulated_rtt_ms: Number(byId<HTMLInputElement>('rtt')?.value ?? 0) || 0,
      ...(byId<HTMLInputElement>('bandwidth')?.value ? { simulated_bandwidth_mbps: Number(byId<HTMLInputElement>('bandwidth')!.value) } : {}),
      resp3: byId<HTMLInputElement>('resp3')?.checked ?? false,
      ...(Number(byId<HTMLInputElement>('clients')?.value) >= 1 ? { clients: Number(byId<HTMLInputElement>('clients')!.value) } : {}),
    };
  }

  set(s: Partial<PageState>): void {
    if (s.text !== undefined) this.editors.setInline(s.text);
    if (s.mode !== undefined) {
      const radio = document.querySelector<HTMLInputElement>(`input[name="mode"][value="${s.mode}"]`);
      if (radio) {
        radio.checked = true;
        radio.dispatchEvent(new Event('change', { bubbles: true }));
      }
    }
    const setInput = (id: string, v: string | number | undefined, ev: string) => {
      const e = byId<HTMLInputElement | HTMLSelectElement>(id);
      if (e && v !== undefined) {
        e.value = String(v);
        e.dispatchEvent(new Event(ev, { bubbles: true }));
      }
    };
    setInput('batch-size', s.batch_size, 'input');
    setInput('on-error', s.on_error, 'change');
    setInput('clients', s.clients, 'input');
    setInput('rtt', s.simulated_rtt_ms, 'input');
    // A state that names an RTT sets the whole link: no bandwidth named is unlimited.
    if (s.simulated_rtt_ms !== undefined || s.simulated_bandwidth_mbps !== undefined) setInput('bandwidth', s.simulated_bandwidth_mbps ?? '', 'input');
    const resp3 = byId<HTMLInputElement>('resp3');
    if (resp3 && s.resp3 !== undefined && resp3.checked !== s.resp3) {
      resp3.checked = s.resp3;
      resp3.dispatchEvent(new Event('change', { bubbles: true }));
    }
  }
}
