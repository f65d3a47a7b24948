/** @module Adding a user (administrators): a name, a role and a password to sign in with. */
import type { User } from '../../../../shared/api/identity';
import { api } from '../../api';
import { h, replace } from '../../dom';
import { submitOnce } from '../../form';

/** The role choices, lowest first; "" is no role (the user can sign in but do nothing). */
export function roleSelect(attrs: Record<string, string>, selected: string | null): HTMLSelectElement {
  const select = h('select', attrs, h('option', { value: '' }, 'no role'));
  for (const role of ['developer', 'platform-engineer', 'administrator']) select.append(h('option', { value: role, selected: role === selected }, role));
  return select;
}

export function newUserForm(added: (user: User) => void): HTMLElement {
  const username = h('input', { id: 'new-username', name: 'username', required: true, maxlength: 254, autocomplete: 'off', pattern: '[A-Za-z0-9._@+\\-]+' });
  const role = roleSelect({ id: 'new-role', name: 'role' }, 'developer');
  const password = h('input', { id: 'new-password', name: 'password', type: 'password', minlength: 8, autocomplete: 'new-password', required: true });
  const submit = h('button', { type: 'submit' }, 'Add user');
  const status = h('div', { role: 'status' });

  async function add(): Promise<void> {
    const user = await api<User>('POST', '/v1/users', { username: username.value.trim(), role: role.value || null, password: password.value });
    username.value = '';
    password.value = '';
    replace(status, h('p', { class: 'muted' }, `${user.username} can now sign in.`));
    added(user);
  }

  return h(
    'form',
    { class: 'card', id: 'new-user', onsubmit: submitOnce(submit, status, add) },
    h('h2', {}, 'Add a user'),
    h('label', { for: 'new-username' }, 'Username'),
    username,
    h('label', { for: 'new-role' }, 'Role'),
    role,
    h('label', { for: 'new-password' }, 'Password (at least 8 characters)'),
    password,
    h('div', { class: 'actions' }, submit),
    status,
  );
}
