/** @module Signing in: a username and password (an 8-hour token), or a token pasted as it is. */
import { api, ApiError } from '../api';
import { remember } from '../auth';
import { h, replace } from '../dom';

export function loginPage(root: HTMLElement, signedIn: () => Promise<void>): void {
  const message = h('p', { role: 'alert', class: 'error', hidden: true });
  const fail = (text: string) => {
    message.hidden = false;
    replace(message, text);
  };
  const username = h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true });
  const password = h('input', { id: 'password', name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const pasted = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', spellcheck: 'false' });

  /** Signs in with the username and password; a failure of either step is shown in `message`. */
  async function signInWithPassword(): Promise<void> {
    try {
      const t = await api<{ token: string }>('POST', '/v1/auth/token', { username: username.value, password: password.value }, false);
      remember(t.token, true);
      password.value = '';
    } catch (err) {
      return fail(err instanceof ApiError && err.status === 401 ? 'Wrong username or password.' : (err as Error).message);
    }
    try {
      await signedIn();
    } catch (err) {
      fail(err instanceof ApiError && err.status === 401 ? 'Wrong username or password.' : (err as Error).message);
    }
  }

  /** Signs in with the pasted token; a failure of the console to start with it is shown in `message`. */
  async function signInWithToken(): Promise<void> {
    remember(pasted.value.trim(), false);
    pasted.value = '';
    await signedIn().catch((err: Error) => fail(err.message));
  }

  // The form handlers start the sign-in and return: each shows its own failures, nothing is left to await.
  const byPassword = h(
    'form',
    {
      class: 'card',
      'aria-labelledby': 'login-title',
      onsubmit: (e: Event) => (e.preventDefault(), void signInWithPassword()),
    },
    h('h1', { id: 'login-title' }, 'Sign in'),
    h('label', { for: 'username' }, 'Username'),
    username,
    h('label', { for: 'password' }, 'Password'),
    password,
    h('button', { type: 'submit' }, 'Sign in'),
  );
  const byToken = h(
    'form',
    {
      class: 'card',
      onsubmit: (e: Event) => (e.preventDefault(), void signInWithToken()),
    },
    h('h2', {}, 'Or use a token'),
    h('p', { class: 'muted' }, 'The bootstrap administrator has only its token (data/admin.token on the server).'),
    h('label', { for: 'token' }, 'Token'),
    pasted,
    h('button', { type: 'submit' }, 'Use token'),
  );
  replace(root, h('div', { class: 'login' }, message, byPassword, byToken));
  username.focus();
}
