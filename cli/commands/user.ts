/**
 * @module `tether user …`: the accounts of the server (docs/http-api.md, users and tokens):
 * listing, adding, disabling and enabling, deleting, and setting passwords (docs/cli.md).
 */
import type { Me, PasswordSet, User, UserDeleted } from '../../shared/api/identity';
import { CliError } from '../errors';
import { confirm } from '../confirm';
import type { Context } from '../context';
import { printJson, table } from '../output';
import { readPasswords, type PasswordQuestion } from '../prompt';

const path = (username: string) => `/v1/users/${encodeURIComponent(username)}`;
const shortTime = (iso: string) => iso.replace(/\.\d+Z$/, 'Z');

/** How a user reads in one line: `ann (developer, human)`. */
function summary(u: User): string {
  return `${u.username} (${u.role ?? 'no role'}, ${u.kind}${u.disabled ? ', disabled' : ''})`;
}

export async function userList(ctx: Context, flags: { json?: boolean }): Promise<void> {
  const users = await ctx.api().request<User[]>('GET', '/v1/users');
  if (flags.json) return printJson(ctx.out, users);
  const rows = users.map((u) => ({
    user: u.username,
    role: u.role ?? '-',
    kind: u.kind,
    state: u.disabled ? 'disabled' : 'enabled',
    created: shortTime(u.created_at),
  }));
  ctx.out.stdout(table(rows, ['user', 'role', 'kind', 'state', 'created']));
}

export interface UserAddFlags {
  role?: string;
  service?: boolean;
  passwordStdin?: boolean;
  json?: boolean;
}

/** Adds a user; a person gets a password only from `--password-stdin` (asked for nowhere else). */
export async function userAdd(ctx: Context, username: string, flags: UserAddFlags): Promise<void> {
  const password = flags.passwordStdin ? (await readPasswords(true, [{ what: 'password', ask: '' }]))[0] : undefined;
  const body = {
    username,
    ...(flags.role === undefined ? {} : { role: flags.role === 'none' ? null : flags.role }),
    ...(flags.service ? { kind: 'service' } : {}),
    ...(password === undefined ? {} : { password }),
  };
  const user = await ctx.api().request<User>('POST', '/v1/users', body);
  if (flags.json) return printJson(ctx.out, user);
  ctx.out.stdout(`added ${summary(user)}\n`);
  if (user.kind === 'human' && password === undefined) {
    ctx.notice(`${username} has no password and cannot log in yet: set one with \`tether user passwd ${username}\``);
  }
}

/** Disables (`disabled`) or enables a user. */
export async function userSetDisabled(ctx: Context, username: string, disabled: boolean, flags: { json?: boolean }): Promise<void> {
  const user = await ctx.api().request<User>('PATCH', path(username), { disabled });
  if (flags.json) return printJson(ctx.out, user);
  ctx.out.stdout(
    disabled
      ? `disabled ${username}: its tokens stop working for good (revoked), its sessions close, and it cannot log in until enabled again\n`
      : `enabled ${username}: it can log in again (its old tokens stay revoked: it logs in afresh)\n`,
  );
}

export async function userRemove(ctx: Context, username: string, flags: { yes?: boolean; json?: boolean }): Promise<void> {
  if (!flags.yes) {
    // Asked about a user that exists: a typo fails before the question.
    const users = await ctx.api().request<User[]>('GET', '/v1/users');
    const user = users.find((u) => u.username === username);
    if (!user) throw new CliError(`no user ${username}`, 'not_found');
    await confirm(`delete user ${username}`, `${summary(user)}: its tokens are revoked and its open sessions close; the name stays taken`, flags.yes);
  }
  const answer = await ctx.api().request<UserDeleted>('DELETE', path(username));
  if (flags.json) return printJson(ctx.out, answer);
  ctx.out.stdout(`deleted ${username}: its tokens are revoked and its open sessions closed; its sessions and audit keep its name, which stays taken\n`);
}

export interface PasswdFlags {
  passwordStdin?: boolean;
  json?: boolean;
}

/**
 * Sets a password: your own (no NAME, or your name) or, as an administrator, anyone's. The
 * current password is asked for only where the server needs it: your own, unless you are an
 * administrator whose token may change users (docs/http-api.md, users and tokens). The server
 * revokes the user's tokens but, for your own, the one in use.
 */
export async function userPasswd(ctx: Context, name: string | undefined, flags: PasswdFlags): Promise<void> {
  const api = ctx.api();
  const me = await api.request<Me>('GET', '/v1/me');
  const username = name ?? me.username;
  const resets = me.role === 'administrator' && (me.scopes.includes('*') || me.scopes.includes('identity:write'));
  const questions: PasswordQuestion[] = [{ what: 'new password', ask: `New password for ${username}: ` }];
  if (username === me.username && !resets) questions.unshift({ what: 'current password', ask: `Current password of ${username}: ` });
  const answers = await readPasswords(flags.passwordStdin, questions, true);
  const body = {
    password: answers.at(-1)!,
    ...(answers.length === 2 ? { current_password: answers[0] } : {}),
  };
  const result = await api.request<PasswordSet>('PUT', `${path(username)}/password`, body);
  if (flags.json) return printJson(ctx.out, result);
  const tokens = `${result.tokens_revoked} token${result.tokens_revoked === 1 ? '' : 's'}`;
  const revoked = username === me.username ? `your other ${tokens} (the one in use is kept)` : `its ${tokens}`;
  ctx.out.stdout(`set the password of ${username}${result.tokens_revoked > 0 ? `; revoked ${revoked} and closed the sessions they opened` : ''}\n`);
}
