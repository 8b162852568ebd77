// The public REST API, as the console calls it: the token kept in this tab's sessionStorage and
// sent only as an Authorization header, asked for when a request needs one; errors as ApiError.
import { $, TOKEN_KEY, h, put, state } from './dom.js';

export class ApiError extends Error {
  constructor(status, err) {
    super((err && err.message) || 'HTTP ' + status);
    this.status = status;
    this.code = err && err.code;
    this.field = err && err.field;
  }
}
export const token = () => sessionStorage.getItem(TOKEN_KEY) || '';

function askToken(why) {
  const dialog = $('#token-dialog');
  $('#token-why').textContent = why;
  const input = $('input[name=token]', dialog);
  input.value = '';
  return new Promise((resolve, reject) => {
    dialog.addEventListener('close', () => {
      if (dialog.returnValue === 'ok' && input.value) {
        sessionStorage.setItem(TOKEN_KEY, input.value);
        showAuth();
        resolve();
      } else reject(new ApiError(401, { code: 'unauthorized', message: 'a token is needed and none was given' }));
    }, { once: true });
    dialog.showModal();
  });
}

export async function api(path, { method = 'GET', body, text = false } = {}) {
  for (let attempt = 0; ; attempt++) {
    const headers = {};
    if (token()) headers.Authorization = 'Bearer ' + token();
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
    const raw = await res.text();
    if (res.status === 401 && attempt < 2) {
      sessionStorage.removeItem(TOKEN_KEY);
      await askToken(attempt ? 'That token was not accepted. Try another.' : 'This daemon needs a token for this.');
      continue;
    }
    if (!res.ok) {
      let err;
      try { err = JSON.parse(raw).error; } catch { err = { message: raw.slice(0, 300) }; }
      throw new ApiError(res.status, err);
    }
    return text ? raw : JSON.parse(raw);
  }
}

// A token before the first request that needs one, so that no request is refused.
export async function tokenFor(write) {
  const a = state.info && state.info.auth;
  if (!a || token()) return;
  if (a.protect_reads || (write && a.tokens))
    await askToken(a.protect_reads ? 'This daemon protects its reads: prompts can be private.' : 'Submitting needs a token on this daemon.');
}

export function showAuth() {
  const el = $('#auth');
  const a = state.info && state.info.auth;
  if (!a || !a.tokens) { put(el, h('span', null, 'no tokens configured')); return; }
  put(el, token() ? 'token set for this tab' : a.protect_reads ? 'token needed' : 'token needed to submit',
    token() ? h('button', { onclick: () => { sessionStorage.removeItem(TOKEN_KEY); showAuth(); } }, 'Forget') : null);
}
