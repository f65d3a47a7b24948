/** @module Users (administrators): every user with its role and state, adding one, and what can be done to each. */
import type { User } from '../../../shared/api/identity';
import { api } from '../api';
import { errorBox, h, replace, table } from '../dom';
import { timeElement } from '../format';
import { newUserForm } from './users/new-user';
import { roleCell, userActions, type UserActionDeps } from './users/user-actions';

export async function usersPage(root: HTMLElement): Promise<void> {
  const list = h('div', { id: 'user-list', 'aria-live': 'polite' });
  const outcome = h('div', { id: 'user-outcome', role: 'status' });
  const panel = h('div', { id: 'user-panel' });

  async function load(): Promise<void> {
    try {
      const users = await api<User[]>('GET', '/v1/users');
      render(users);
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }
  const deps: UserActionDeps = { changed: () => void load(), say: (m) => replace(outcome, m), panel };

  function render(users: User[]): void {
    replace(
      list,
      table(
        [...users].sort((a, b) => a.username.localeCompare(b.username)),
        {
          User: (u) => h('span', { 'data-username': u.username }, u.username),
          Kind: (u) => u.kind,
          Role: (u) => roleCell(u, deps),
          State: (u) => h('span', { class: `status ${u.disabled ? 'offline' : 'online'}`, 'data-user-state': u.username }, u.disabled ? 'disabled' : 'enabled'),
          Created: (u) => timeElement(u.created_at),
          '': (u) => userActions(u, deps),
        },
        'No users.',
      ),
    );
  }

  replace(
    root,
    h('h1', {}, 'Users'),
    list,
    outcome,
    panel,
    newUserForm(() => void load()),
  );
  await load();
}
