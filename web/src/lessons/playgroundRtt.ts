// Compare's and the Sweep's RTT follow the playground's (#rtt) once that is
// set, until they are set themselves (by hand or by a permalink): a run at
// the RTT being looked at, not at the view's own default.

/** Makes `rtt` follow the playground's RTT field; `own()` stops it, as typing in `rtt` does. */
export function followPlaygroundRtt(rtt: HTMLInputElement): { own: () => void } {
  let own = false;
  rtt.addEventListener('input', () => (own = true));
  const playground = document.getElementById('rtt') as HTMLInputElement | null;
  playground?.addEventListener('input', () => {
    if (!own && playground.value !== '') rtt.value = playground.value;
  });
  return { own: () => (own = true) };
}
