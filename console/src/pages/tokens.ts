/**
 * @module Tokens: your own (administrators: everyone's, or one user's), active or not, each
 * revocable; administrators create them here too.
 */
import type { Token } from '../../../shared/api/identity';
import { apiList, api } from '../api';
import { currentUser } from '../auth';
import { confirmInline, errorBox, h, replace, table } from '../dom';
import { timeElement } from '../format';
import { isAdmin } from '../roles';
import { newTokenForm } from './tokens/new-token';

/** What a token's state is now, from its record. */
function stateOf(t: Token): string {
  if (t.revoked_at) return 'revoked';
  if (t.expires_at && Date.parse(t.expires_at) <= Date.now()) return 'expired';
  return 'active';
}

export async function tokensPage(root: HTMLElement): Promise<void> {
  const admin = isAdmin(currentUser());
  const everyone = h('input', { type: 'checkbox', id: 'tokens-all' });
  const status = h(
    'select',
    { id: 'tokens-status', 'aria-label': 'Token state' },
    ...['active', 'revoked', 'expired', 'all'].map((s) => h('option', { value: s }, s)),
  );
  const list = h('div', { id: 'token-list', 'aria-live': 'polite' });
  const panel = h('div', { id: 'token-panel', role: 'status' });

  async function load(): Promise<void> {
    const query = new URLSearchParams({ status: status.value, per_page: '200' });
    if (everyone.checked) query.set('all', 'true');
    try {
      const { data, meta } = await apiList<Token>(`/v1/tokens?${query}`);
      replace(list, h('p', { class: 'muted' }, `${data.length} of ${meta.total} tokens`), render(data));
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }

  async function revoke(t: Token): Promise<void> {
    const warning = t.current ? ' It is the token this console uses: you will be signed out.' : '';
    if (!(await confirmInline(panel, `Revoke ${t.token_id} of ${t.username}?${warning}`, 'Revoke'))) return;
    try {
      await api('DELETE', `/v1/tokens/${encodeURIComponent(t.token_id)}`);
      replace(panel, h('p', { class: 'muted' }, `${t.token_id} is revoked.`));
    } catch (err) {
      replace(panel, errorBox((err as Error).message));
    }
    await load();
  }

  const render = (tokens: Token[]) =>
    table(
      tokens,
      {
        Token: (t) => h('code', { 'data-token-id': t.token_id }, t.token_id, t.current ? ' (this console)' : ''),
        User: (t) => t.username,
        Scopes: (t) => t.scopes.join(' ') || '(the first release’s)',
        Tenants: (t) => t.tenants.join(' '),
        Created: (t) => timeElement(t.created_at),
        Expires: (t) => timeElement(t.expires_at),
        State: (t) => h('span', { 'data-token-state': t.token_id }, stateOf(t)),
        '': (t) => stateOf(t) === 'active' && h('button', { type: 'button', 'data-revoke': t.token_id, onclick: () => void revoke(t) }, 'Revoke…'),
      },
      'No tokens.',
    );

  everyone.addEventListener('change', () => void load());
  status.addEventListener('change', () => void load());
  replace(
    root,
    h('h1', {}, 'Tokens'),
    h('div', { class: 'filters' }, status, admin && h('label', {}, everyone, ' every user’s')),
    list,
    panel,
    admin && newTokenForm(() => void load()),
  );
  await load();
}
