/**
 * @module Issuing a token (administrators) for a user, with a lifetime, scopes and tenants if
 * wanted; the token is shown this once. The server keeps it no broader than the console's own.
 */
import type { IssuedToken } from '../../../../shared/api/identity';
import { api } from '../../api';
import { h, replace } from '../../dom';
import { secretOnce, submitOnce } from '../../form';
import { formatTime } from '../../format';

/** "a, b c" → ["a", "b", "c"]; undefined when empty, so the server's defaults apply. */
const listOf = (text: string) => {
  const items = text.split(/[\s,]+/).filter(Boolean);
  return items.length > 0 ? items : undefined;
};

export function newTokenForm(issued: () => void): HTMLElement {
  const username = h('input', { id: 'token-username', required: true, autocomplete: 'off' });
  const ttl = h('input', { id: 'token-ttl', type: 'number', min: 1, placeholder: 'the most its kind allows' });
  const scopes = h('input', { id: 'token-scopes', placeholder: 'e.g. fleet:read fleet:write (empty: the same as yours)' });
  const tenants = h('input', { id: 'token-tenants', placeholder: 'e.g. acme (empty: none)' });
  const submit = h('button', { type: 'submit' }, 'Create token');
  const result = h('div', { id: 'token-result', 'aria-live': 'polite' });

  async function create(): Promise<void> {
    const body = {
      username: username.value.trim(),
      ttl_seconds: ttl.value ? Number(ttl.value) : undefined,
      scopes: listOf(scopes.value),
      tenants: listOf(tenants.value),
    };
    const t = await api<IssuedToken>('POST', '/v1/tokens', body);
    replace(
      result,
      h(
        'div',
        { class: 'card secret' },
        h(
          'p',
          {},
          h('strong', {}, `A token for ${body.username}, shown this once`),
          ` (${t.token_id}, ${t.expires_at ? `expires ${formatTime(t.expires_at)}` : 'never expires'}):`,
        ),
        secretOnce('new-token', t.token, 'Copy token'),
      ),
    );
    issued();
  }

  return h(
    'div',
    {},
    h(
      'form',
      { class: 'card', id: 'new-token-form', onsubmit: submitOnce(submit, result, create) },
      h('h2', {}, 'Create a token'),
      h('label', { for: 'token-username' }, 'For user'),
      username,
      h('label', { for: 'token-ttl' }, 'Lifetime in seconds'),
      ttl,
      h('label', { for: 'token-scopes' }, 'Scopes'),
      scopes,
      h('label', { for: 'token-tenants' }, 'Tenants (fleet)'),
      tenants,
      h('div', { class: 'actions' }, submit),
    ),
    result,
  );
}
