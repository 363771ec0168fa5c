// Which server the page runs on, in its own words (GET /api/v1/info's
// `redis.server`, `version`, `mode`): "Valkey 9.1.2, cluster".
import type { InfoResponse } from '../api/types.js';

const NAMES: Record<string, string> = { redis: 'Redis', valkey: 'Valkey', redict: 'Redict' };

/** "Valkey 9.1.2", with ", cluster" for a cluster; null while unknown. */
export function serverText(info: InfoResponse | null): string | null {
  const r = info?.redis;
  if (!r?.reachable || !r.version) return null;
  const name = (r.server && NAMES[r.server]) ?? r.server ?? 'Redis';
  return `${name} ${r.version}${r.mode === 'cluster' ? ', cluster' : ''}`;
}

/** Shows the server in the page's header, once known. */
export function showServer(info: InfoResponse | null): void {
  const el = document.getElementById('server-name');
  const text = serverText(info);
  if (!el || !text) return;
  el.textContent = `on ${text}`;
  el.hidden = false;
}
