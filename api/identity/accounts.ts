/**
 * @module Account administration (docs/http-api.md, users and tokens): changing, disabling and
 * deleting users, changing passwords, listing and revoking tokens. Whatever stops a token from
 * working takes effect at once, through the effects the composition wires in (the token cache,
 * the sessions the tokens opened, the streams they joined).
 */
import { hasScope, requireAccess } from '../access';
import { badRequest, conflict, forbidden, notFound } from '../errors';
import { hasRole } from '../roles';
import type { Store } from '../store/index';
import type { Principal, TokenRecord, TokenStatus } from '../store/tokens';
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
  revoke_tokens?: boolean | undefined;
}

export interface TokenListing {
  /** Every user's tokens (administrators). */
  all?: boolean | undefined;
  /** One user's tokens; another user's needs an administrator. */
  username?: string | undefined;
  status: TokenStatus;
  limit: number;
  offset: number;
}

const isAdministrator = (p: Principal) => hasRole(p.role, 'administrator');

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

  /** Deletes the user and revokes its tokens, together; the ids revoked. */
  const deleteTogether = (username: string, at: string): Promise<string[]> =>
    store.transaction(async (tx) => {
      await tx.users.markDeleted(username, at);
      return tx.tokens.revokeAllOf(username, at);
    });

  /** Sets the (already computed) password hash and revokes the tokens asked for, together; the ids revoked. */
  const setPasswordTogether = (username: string, hash: string, revoke: boolean, keep: string): Promise<string[]> =>
    store.transaction(async (tx) => {
      await tx.users.setPasswordHash(username, hash);
      return revoke ? tx.tokens.revokeAllOf(username, iso(), keep) : [];
    });

  return {
    /**
     * Changes a user's role or disabled flag. Disabling cuts its tokens off (they are refused
     * while it lasts, not revoked: enabling again restores them).
     */
    async updateUser(caller: Principal, username: string, change: UserChange): Promise<User> {
      requireAccess(caller, 'identity:write', 'administrator', 'changing users');
      await existing(username);
      if (change.disabled === true && username === caller.username) {
        throw conflict('you cannot disable your own account; another administrator can');
      }
      const user = await keepingAnAdministrator(username, () => store.users.update(username, change));
      if (!user) throw notFound(`no user ${username}`);
      effects.userChanged(username);
      if (change.disabled === true) await effects.cutOff(await store.tokens.unrevokedIdsOf(username), 'user_disabled');
      return user;
    },

    /** Revokes every token of a user and deletes it; its name stays taken. */
    async deleteUser(caller: Principal, username: string): Promise<{ username: string; deleted: true }> {
      requireAccess(caller, 'identity:write', 'administrator', 'deleting users');
      await existing(username);
      if (username === caller.username) throw conflict('you cannot delete your own account; another administrator can');
      const revoked = await keepingAnAdministrator(username, () => deleteTogether(username, iso()));
      effects.userChanged(username);
      await effects.cutOff(revoked, 'user_deleted');
      return { username, deleted: true };
    },

    /**
     * Sets a user's password: one's own with the current password, anyone's as an administrator
     * with `identity:write` (a current password given is checked all the same). The current
     * password is checked through `checkCurrent`, which runs `verify` under the failed-login
     * limit (or refuses with 429 without running it).
     */
    async changePassword(caller: Principal, username: string, change: PasswordChange, checkCurrent: (verify: () => Promise<boolean>) => Promise<boolean>) {
      const resets = isAdministrator(caller) && hasScope(caller, 'identity:write');
      if (!resets && username !== caller.username) {
        requireAccess(caller, 'identity:write', 'administrator', "changing another user's password");
      }
      const user = await existing(username);
      if (change.current_password === undefined && !resets) {
        throw badRequest('changing your own password needs your current password', [
          { path: 'current_password', message: 'required to change your own password' },
        ]);
      }
      const current = change.current_password;
      if (current !== undefined && !(await checkCurrent(() => verifyPassword(current, user.password_hash)))) {
        throw forbidden(`current_password is not the password of ${username}`);
      }
      // Hashed before the transaction: it holds the database only for the database's work.
      const hash = await hashPassword(change.password);
      const revoked = await setPasswordTogether(username, hash, change.revoke_tokens === true, caller.token_id);
      await effects.cutOff(revoked, 'token_revoked');
      return { username, tokens_revoked: revoked.length };
    },

    /** A page of tokens, newest first: one's own, or (administrators) another user's or everyone's. */
    async listTokens(caller: Principal, q: TokenListing): Promise<{ items: Array<TokenRecord & { current: boolean }>; total: number }> {
      if (q.all === true || (q.username !== undefined && q.username !== caller.username)) {
        requireAccess(caller, 'identity:read', 'administrator', "listing other users' tokens");
      }
      const username = q.all === true ? undefined : (q.username ?? caller.username);
      const { items, total } = await store.tokens.list({ username, status: q.status, now: iso(), limit: q.limit, offset: q.offset });
      return { items: items.map((t) => ({ ...t, current: t.token_id === caller.token_id })), total };
    },

    /**
     * Revokes a token of the caller's own user, or (administrators with `identity:write`) any
     * token. Another user's token is 404 to everyone else, exactly like an unknown one.
     * Revoking twice is not an error.
     */
    async revokeToken(caller: Principal, tokenId: string): Promise<void> {
      const token = await store.tokens.get(tokenId);
      if (token?.username !== caller.username) {
        if (!isAdministrator(caller)) throw notFound(`no token ${tokenId}`);
        requireAccess(caller, 'identity:write', 'administrator', "revoking another user's tokens");
        if (!token) throw notFound(`no token ${tokenId}`);
      }
      await store.tokens.revoke(tokenId, iso());
      await effects.cutOff([tokenId], 'token_revoked');
    },
  };
}
export type Accounts = ReturnType<typeof createAccounts>;
