// The token field, for a `pipelab serve --token …`: shown when the API
// answers 401 (a token is needed, or the one given is wrong) and while a
// token is set (to forget it). The token goes to this tab's sessionStorage
// (api/token.ts), never into the URL or a permalink.
import { getToken, setToken, TOKEN_CHANGED, TOKEN_REQUIRED } from '../api/token.js';

const h = <K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...kids: Array<Node | string>) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  e.append(...kids);
  return e;
};

/** Mounts the field after `anchor`; `verify()` asks the API whether the token now set lets the page in. */
export function mountTokenField(anchor: Element, verify: () => Promise<boolean>): void {
  const input = h('input', { type: 'password', id: 'token-input', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'token-note' });
  const use = h('button', { type: 'submit', id: 'token-use' }, 'Use token');
  const forget = h('button', { type: 'button', id: 'token-forget' }, 'Forget token');
  const note = h('span', { id: 'token-note', class: 'token-note', role: 'status' });
  const form = h(
    'form',
    { id: 'token-form', class: 'token-panel', 'aria-label': 'API token' },
    h('label', { for: 'token-input' }, 'API token'),
    input,
    use,
    forget,
    note,
  );
  anchor.after(form);

  const show = (why: string, asking: boolean) => {
    form.hidden = false;
    form.dataset.state = asking ? 'asking' : 'set';
    input.hidden = use.hidden = !asking;
    forget.hidden = getToken() === null;
    note.textContent = why;
  };
  const hide = () => {
    form.hidden = true;
    note.textContent = '';
  };
  if (getToken()) show('A token is set for this tab (kept until the tab closes).', false);
  else hide();

  addEventListener(TOKEN_REQUIRED, (e) => {
    const wrong = getToken() !== null;
    show(
      wrong
        ? `The server refused the token given (${(e as CustomEvent<string>).detail}): type the right one.`
        : 'This server needs an API token (pipelab serve --token): type it here. It stays in this tab only, never in a link.',
      true,
    );
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) {
      note.textContent = 'Type the token first.';
      return;
    }
    input.value = '';
    setToken(t);
    if (await verify()) show('Token accepted; kept for this tab until it closes.', false);
  });
  forget.addEventListener('click', () => {
    setToken(null);
    show('Token forgotten.', true);
  });
  addEventListener(TOKEN_CHANGED, () => (forget.hidden = getToken() === null));
}
