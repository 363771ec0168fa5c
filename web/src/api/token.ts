// The API token of a `pipelab serve --token …`: given by the reader in the
// page's token field (playground/tokenField.ts), kept in this tab's
// sessionStorage only (gone when the tab closes; never in a URL, a
// permalink or a cookie), and sent as `Authorization: Bearer` on every API
// call. A 401 from the API tells the page a token is needed (or wrong).

const KEY = 'pipelab.token';

/** Fired on `window` when the API answers 401; `detail` is its message. */
export const TOKEN_REQUIRED = 'pipelab:token-required';
/** Fired on `window` when the token is set or forgotten. */
export const TOKEN_CHANGED = 'pipelab:token-changed';

function storage(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage disabled: the token lives as long as the page
  }
}

let inMemory: string | null = null;

export function getToken(): string | null {
  return storage()?.getItem(KEY) ?? inMemory;
}

/** Sets the token (`null` forgets it) and tells the page. */
export function setToken(token: string | null): void {
  const s = storage();
  if (token) s?.setItem(KEY, token);
  else s?.removeItem(KEY);
  inMemory = s ? null : token;
  dispatchEvent(new CustomEvent(TOKEN_CHANGED));
}

/** `headers` with the token's `Authorization`, when there is one. */
export function withToken(headers: Record<string, string> = {}): Record<string, string> {
  const t = getToken();
  return t ? { ...headers, authorization: `Bearer ${t}` } : headers;
}

/** Tells the page when `res` says a token is needed. */
export function noteUnauthorized(status: number, message: string): void {
  if (status === 401) dispatchEvent(new CustomEvent(TOKEN_REQUIRED, { detail: message }));
}
