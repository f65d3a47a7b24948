/**
 * @module Account administration (docs/http-api.md, users and tokens): changing, disabling and
 * deleting users, changing passwords, revoking tokens. Each change, the tokens it revokes and its
 * audit events commit together (api/audit/recorder.ts); whatever stops a token from working then
 * takes effect at once, through the effects the composition wires in (the token cache, the
 * sessions the tokens opened, the streams they joined). Listing tokens is `./token-listing`.
 */
import { hasScope, requireAccess } from '../access';
import { audited, eventsOf, recordAudit, type AuditedRepos, type AuditRecord, type AuditSource } from '../audit/recorder';
import { badRequest, conflict, forbidden, notFound } from '../errors';
import { hasRole } from '../roles';
import type { Store } from '../store/index';
import type { Principal } from '../store/tokens';
import { isLastAdministratorViolation } from '../store/errors';
import type { User, UserChange } from '../store/users';
import { hashPassword, verifyPassword } from './passwords';

/** Why tokens stopped working: the audit reason of the sessions they opened. */
export type CutOffReason = 'token_revoked' | 'user_disabled' | 'user_deleted';

export interface AccountEffects {
  /** The user's role or state changed: principals remembered for its tokens are stale. */
  userChanged(username: string): void;
  /**
   * These tokens admit no one from now on: close the sessions they opened and the streams they
   * joined. Awaited before the change is answered.
   */
  cutOff(tokenIds: readonly string[], reason: CutOffReason): Promise<void>;
}

export interface PasswordChange {
  password: string;
  current_password?: string | undefined;
}

const isAdministrator = (p: Principal) => hasRole(p.role, 'administrator');

/** One `token.revoked` event per token a user change revoked, with the change that did it. */
const revocations = (username: string, ids: readonly string[], reason: string): AuditRecord[] =>
  ids.map((id) => ({ event: 'token.revoked', target: { kind: 'token', id }, details: { username, reason } }));

export function createAccounts(store: Store, now: () => number, effects: AccountEffects) {
  const iso = () => new Date(now()).toISOString();

  /** The user, or 404. */
  async function existing(username: string) {
    const user = await store.users.get(username);
    if (!user) throw notFound(`no user ${username}`);
    return user;
  }

  /** Runs a change that may take away the last enabled administrator; that is 409. */
  async function keepingAnAdministrator<T>(username: string, change: () => Promise<T>): Promise<T> {
    try {
      return await change();
    } catch (err) {
      if (!isLastAdministratorViolation(err)) throw err;
      throw conflict(`${username} is the last enabled administrator; make another user administrator first`);
    }
  }

  /** Runs `change` in one transaction with the audit events it returns, all at one moment. */
  const changing = <T>(source: AuditSource, change: (tx: AuditedRepos, at: string) => Promise<{ result: T; records: AuditRecord[] }>) =>
    audited(store, async (tx) => {
      const at = iso();
      const { result, records } = await change(tx, at);
      await recordAudit(tx.db, eventsOf(source, at, records));
      return result;
    });

  /**
   * Applies a role or disabled change; the tokens it revoked. Disabling revokes every token of
   * the user; enabling revokes any left (issued while the change was in flight), so that no
   * token from before comes back to life: an enabled user logs in afresh.
   */
  const applyUserChange = (username: string, change: UserChange, source: AuditSource) =>
    changing(source, async (tx, at) => {
      const before = await tx.users.get(username);
      const user = before && (await tx.users.update(username, change));
      if (!before || !user) return { result: undefined, records: [] };
      const records: AuditRecord[] = [];
      const target = { kind: 'user', id: username } as const;
      if (user.role !== before.role) records.push({ event: 'user.role_changed', target, details: { from: before.role, to: user.role } });
      let revoked: string[] = [];
      if (user.disabled !== before.disabled) {
        revoked = await tx.tokens.revokeAllOf(username, at);
        const event = user.disabled ? 'user.disabled' : 'user.enabled';
        records.push({ event, target, details: { tokens_revoked: revoked.length } }, ...revocations(username, revoked, event));
      }
      return { result: { user, revoked }, records };
    });

  return {
    /** Changes a user's role or disabled flag (see `applyUserChange`). */
    async updateUser(caller: Principal, username: string, change: UserChange, source: AuditSource): Promise<User> {
      requireAccess(caller, 'identity:write', 'administrator', 'changing users');
      await existing(username);
      if (change.disabled === true && username === caller.username) {
        throw conflict('you cannot disable your own account; another administrator can');
      }
      const changed = await keepingAnAdministrator(username, () => applyUserChange(username, change, source));
      if (!changed) throw notFound(`no user ${username}`);
      effects.userChanged(username);
      if (changed.revoked.length > 0) await effects.cutOff(changed.revoked, changed.user.disabled ? 'user_disabled' : 'token_revoked');
      return changed.user;
    },

    /** Revokes every token of a user and deletes it; its name stays taken. */
    async deleteUser(caller: Principal, username: string, source: AuditSource): Promise<{ username: string; deleted: true }> {
      requireAccess(caller, 'identity:write', 'administrator', 'deleting users');
      await existing(username);
      if (username === caller.username) throw conflict('you cannot delete your own account; another administrator can');
      const revoked = await keepingAnAdministrator(username, () =>
        changing(source, async (tx, at) => {
          if (!(await tx.users.markDeleted(username, at))) throw notFound(`no user ${username}`);
          const ids = await tx.tokens.revokeAllOf(username, at);
          const target = { kind: 'user', id: username } as const;
          return {
            result: ids,
            records: [{ event: 'user.deleted', target, details: { tokens_revoked: ids.length } }, ...revocations(username, ids, 'user.deleted')],
          };
        }),
      );
      effects.userChanged(username);
      await effects.cutOff(revoked, 'user_deleted');
      return { username, deleted: true };
    },

    /**
     * Sets a user's password: one's own with the current password, anyone's as an administrator
     * with `identity:write` (a current password given is checked all the same). The current
     * password is checked through `checkCurrent`, which runs `verify` under the failed-login
     * limit (or refuses with 429 without running it); a wrong one is audited as a failed change.
     * Every token of the user is revoked but, for one's own password, the token making the
     * request: whoever held another (a thief, a forgotten laptop) is out, the one who changed it is not.
     */
    async changePassword(
      caller: Principal,
      username: string,
      change: PasswordChange,
      checkCurrent: (verify: () => Promise<boolean>) => Promise<boolean>,
      source: AuditSource,
    ) {
      const resets = isAdministrator(caller) && hasScope(caller, 'identity:write');
      const own = username === caller.username;
      if (!resets && !own) requireAccess(caller, 'identity:write', 'administrator', "changing another user's password");
      const user = await existing(username);
      if (change.current_password === undefined && !resets) {
        throw badRequest('changing your own password needs your current password', [
          { path: 'current_password', message: 'required to change your own password' },
        ]);
      }
      const target = { kind: 'user', id: username } as const;
      const current = change.current_password;
      if (current !== undefined && !(await checkCurrent(() => verifyPassword(current, user.password_hash)))) {
        const failed: AuditRecord = { event: 'user.password_changed', target, outcome: 'failure', details: { reason: 'wrong_current_password' } };
        await recordAudit(store.db, eventsOf(source, iso(), [failed]));
        throw forbidden(`current_password is not the password of ${username}`);
      }
      // Hashed before the transaction: it holds the database only for the database's work.
      const hash = await hashPassword(change.password);
      const keep = own ? caller.token_id : undefined;
      const revoked = await changing(source, async (tx, at) => {
        if (!(await tx.users.setPasswordHash(username, hash))) throw notFound(`no user ${username}`);
        const ids = await tx.tokens.revokeAllOf(username, at, keep);
        const details = { by: own ? 'self' : 'administrator', tokens_revoked: ids.length, kept_token_id: keep ?? null };
        return { result: ids, records: [{ event: 'user.password_changed', target, details }, ...revocations(username, ids, 'user.password_changed')] };
      });
      await effects.cutOff(revoked, 'token_revoked');
      return { username, tokens_revoked: revoked.length };
    },

    /**
     * Revokes a token of the caller's own user, or (administrators with `identity:write`) any
     * token. Another user's token is 404 to everyone else, exactly like an unknown one.
     * Revoking twice is not an error (and recorded once).
     */
    async revokeToken(caller: Principal, tokenId: string, source: AuditSource): Promise<void> {
      const token = await store.tokens.get(tokenId);
      if (token?.username !== caller.username) {
        if (!isAdministrator(caller)) throw notFound(`no token ${tokenId}`);
        requireAccess(caller, 'identity:write', 'administrator', "revoking another user's tokens");
        if (!token) throw notFound(`no token ${tokenId}`);
      }
      await changing(source, async (tx, at) => {
        const revoked = await tx.tokens.revoke(tokenId, at);
        return { result: revoked, records: revoked ? revocations(token.username, [tokenId], 'revoked') : [] };
      });
      await effects.cutOff([tokenId], 'token_revoked');
    },
  };
}
export type Accounts = ReturnType<typeof createAccounts>;
