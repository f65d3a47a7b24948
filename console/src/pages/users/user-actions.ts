/**
 * @module What an administrator does to one user: change its role, disable or enable it, set its
 * password, remove it. Each calls the API and shows what it answered; what disabling or a new
 * password ends (tokens, sessions) is the server's to decide.
 */
import type { PasswordSet, User, UserDeleted } from '../../../../shared/api/identity';
import { api } from '../../api';
import { confirmInline, errorBox, h, replace } from '../../dom';
import { roleSelect } from './new-user';

/** `changed` reads the list again; `say` shows an outcome under the list. */
export interface UserActionDeps {
  changed: () => void;
  say: (message: HTMLElement) => void;
  /** Where a question or a form about one user goes. */
  panel: HTMLElement;
}

const userPath = (u: User) => `/v1/users/${encodeURIComponent(u.username)}`;

async function attempt(deps: UserActionDeps, work: () => Promise<string>): Promise<void> {
  try {
    deps.say(h('p', { class: 'muted' }, await work()));
  } catch (err) {
    deps.say(errorBox((err as Error).message));
  }
  deps.changed();
}

/** The role of a user, changed as soon as another is chosen. */
export function roleCell(u: User, deps: UserActionDeps): HTMLElement {
  const select = roleSelect({ 'aria-label': `Role of ${u.username}`, 'data-user-role': u.username }, u.role);
  select.addEventListener(
    'change',
    () =>
      void attempt(deps, async () => {
        const changed = await api<User>('PATCH', userPath(u), { role: select.value || null });
        return `${changed.username} is now ${changed.role ?? 'without a role'}.`;
      }),
  );
  return select;
}

function passwordForm(u: User, deps: UserActionDeps): HTMLElement {
  const password = h('input', { type: 'password', id: 'set-password', minlength: 8, required: true, autocomplete: 'new-password' });
  return h(
    'form',
    {
      class: 'card',
      id: 'password-form',
      onsubmit: (e: Event) => {
        e.preventDefault();
        replace(deps.panel);
        void attempt(deps, async () => {
          const set = await api<PasswordSet>('PUT', `${userPath(u)}/password`, { password: password.value });
          return `The password of ${set.username} is changed; ${set.tokens_revoked} of its tokens were revoked.`;
        });
      },
    },
    h('label', { for: 'set-password' }, `New password for ${u.username} (at least 8 characters)`),
    password,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'submit' }, 'Set password'),
      h('button', { type: 'button', onclick: () => replace(deps.panel) }, 'Cancel'),
    ),
  );
}

/** The buttons of one user's row. */
export function userActions(u: User, deps: UserActionDeps): HTMLElement {
  const disable = () =>
    void attempt(deps, async () => {
      const changed = await api<User>('PATCH', userPath(u), { disabled: !u.disabled });
      return changed.disabled ? `${changed.username} is disabled: its tokens no longer work.` : `${changed.username} is enabled again.`;
    });
  const remove = async () => {
    const sure = await confirmInline(deps.panel, `Remove ${u.username}? Its tokens are revoked and its name stays taken.`, 'Remove user');
    if (sure) {
      await attempt(deps, async () => `${(await api<UserDeleted>('DELETE', userPath(u))).username} was removed.`);
    }
  };
  return h(
    'div',
    { class: 'actions', 'data-user': u.username },
    h('button', { type: 'button', 'data-action': u.disabled ? 'enable' : 'disable', onclick: disable }, u.disabled ? 'Enable' : 'Disable'),
    h('button', { type: 'button', 'data-action': 'password', onclick: () => replace(deps.panel, passwordForm(u, deps)) }, 'Password…'),
    h('button', { type: 'button', class: 'danger', 'data-action': 'remove', onclick: () => void remove() }, 'Remove…'),
  );
}
