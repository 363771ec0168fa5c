// The banner over the playground: shown while Redis or the API is down,
// hidden when /readyz says ready. The editors work either way (wasm).
import { checkHealth, type Health } from '../api/client.js';

const banner = () => document.getElementById('banner') as HTMLDivElement;

export function showBanner(health: Health, detail?: string) {
  const b = banner();
  if (health === 'ok') {
    b.hidden = true;
    b.textContent = '';
    return;
  }
  b.hidden = false;
  b.dataset.kind = health;
  const why = detail ? ` Server said: ${detail.replace(/^Redis is unreachable:\s*/i, '')}.` : '';
  b.textContent = health === 'redis_down'
    ? `Redis is unreachable: runs fail until it is back. The editors still work (they run in your browser).${why}`
    : `The pipelab API is unreachable: start it with \`pipelab serve\` to run batches. The editors still work (they run in your browser).${why}`;
}

/** Asks /readyz and shows the answer. */
export async function refreshHealth() {
  showBanner(await checkHealth());
}

/** The page could not start: says why in the banner. */
export function showStartFailure(e: Error) {
  showBanner('api_down');
  banner().textContent = `The playground failed to start: ${e.message}`;
}
