/**
 * Account administration (api/identity/accounts.ts) on a real store (SQLite, or PostgreSQL): who may change,
 * disable and delete users and tokens; the last enabled administrator stays; whatever stops a
 * token from working is handed at once to the effects the composition wires in (the token cache,
 * the sessions and streams the tokens opened), recorded here. Disabling and password changes
 * revoke tokens for good.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { createAccounts, type CutOffReason } from '../../../../api/identity/accounts';
import { createIdentity } from '../../../../api/identity/identity';
import { listTokens } from '../../../../api/identity/token-listing';
import { systemSource } from '../../../../api/audit/recorder';
import { sha256Hex } from '../../../../shared/ids';
import { failure, storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const NOW = new Date(T0).toISOString();

/** The error a promise rejects with (fails when it resolves). */
const rejection = (p: Promise<unknown>): Promise<unknown> => failure(() => p);

describe('accounts', () => {
  const store = storeForEachTest();
  let changed: string[];
  let cutOff: Array<{ ids: readonly string[]; reason: CutOffReason }>;
  const accounts = () =>
    createAccounts(store, () => T0, {
      userChanged: (username) => void changed.push(username),
      cutOff: async (ids, reason) => void cutOff.push({ ids: [...ids], reason }),
    });
  const identity = () => createIdentity(store, () => T0);
  const src = systemSource();
  /** A user with a token of every scope (as a login gives); its principal (as authentication sees it) and the token. */
  async function user(username: string, role: 'administrator' | 'developer' | null, password?: string) {
    await identity().createUser({ username, role, kind: 'human', password });
    const issued = await identity().issueToken(username, { scopes: ['*'] });
    return { ...issued, principal: (await store.tokens.findByHash(sha256Hex(issued.token)))! };
  }
  /** Runs `verify` as the failed-login limit would let it. */
  const unlimited = (verify: () => Promise<boolean>) => verify();

  beforeEach(() => {
    changed = [];
    cutOff = [];
  });

  describe('changing a user', () => {
    it('needs an administrator; disabling cuts its tokens off at once', async () => {
      const admin = await user('root', 'administrator');
      const dev = await user('ann', 'developer');
      const second = await identity().issueToken('ann', {});
      expect(await rejection(accounts().updateUser(dev.principal, 'root', { role: 'developer' }, src))).toMatchObject({ code: 'forbidden' });
      expect(changed).toEqual([]);

      expect(await accounts().updateUser(admin.principal, 'ann', { disabled: true }, src)).toMatchObject({ username: 'ann', disabled: true });
      expect(changed).toEqual(['ann']);
      expect(cutOff).toEqual([{ ids: expect.arrayContaining([dev.token_id, second.token_id]), reason: 'user_disabled' }]);
      expect(cutOff[0]!.ids).toHaveLength(2);
      // revoked for good: enabling brings none back
      await accounts().updateUser(admin.principal, 'ann', { disabled: false }, src);
      expect((await store.tokens.get(second.token_id))!.revoked_at).not.toBeNull();
      expect((await store.tokens.get(dev.token_id))!.revoked_at).not.toBeNull();
      expect(await rejection(accounts().updateUser(admin.principal, 'nobody', { disabled: true }, src))).toMatchObject({ code: 'not_found' });
    });

    it('keeps an enabled administrator: none disables itself, and the last one cannot be demoted or disabled', async () => {
      const root = await user('root', 'administrator');
      await user('bob', 'administrator');
      expect(await rejection(accounts().updateUser(root.principal, 'root', { disabled: true }, src))).toMatchObject({ code: 'conflict' });
      await accounts().updateUser(root.principal, 'bob', { role: 'developer' }, src);
      expect(await rejection(accounts().updateUser(root.principal, 'root', { role: 'developer' }, src))).toMatchObject({
        code: 'conflict',
        message: expect.stringContaining('last enabled administrator'),
      });
      expect((await store.users.get('root'))!.role).toBe('administrator');
    });
  });

  describe('deleting a user', () => {
    it('revokes all its tokens, cuts them off, and keeps the name taken', async () => {
      const admin = await user('root', 'administrator');
      const ann = await user('ann', 'developer');
      expect(await rejection(accounts().deleteUser(admin.principal, 'root', src))).toMatchObject({ code: 'conflict' });
      expect(await accounts().deleteUser(admin.principal, 'ann', src)).toEqual({ username: 'ann', deleted: true });
      expect(cutOff).toEqual([{ ids: [ann.token_id], reason: 'user_deleted' }]);
      expect((await store.tokens.get(ann.token_id))!.revoked_at).not.toBeNull();
      expect(changed).toEqual(['ann']);
      expect(await rejection(identity().createUser({ username: 'ann' }))).toMatchObject({ code: 'conflict' });
    });
  });

  describe('passwords', () => {
    it("one's own needs the current password, checked under the failed-login limit", async () => {
      const ann = await user('ann', 'developer', 'old password');
      expect(await rejection(accounts().changePassword(ann.principal, 'ann', { password: 'new password' }, unlimited, src))).toMatchObject({
        code: 'bad_request',
      });
      expect(
        await rejection(accounts().changePassword(ann.principal, 'ann', { password: 'new password', current_password: 'wrong' }, unlimited, src)),
      ).toMatchObject({
        code: 'forbidden',
      });
      // The limit refuses: the password is not even checked, and nothing changes.
      let checked = false;
      const limited = async () => {
        checked = true;
        throw new Error('429: too many failed logins');
      };
      await expect(
        accounts().changePassword(ann.principal, 'ann', { password: 'new password', current_password: 'old password' }, limited, src),
      ).rejects.toThrow(/429/);
      expect(checked).toBe(true);
      await identity().login('ann', 'old password');

      // the logins above made tokens of their own: revoked with the change, not the one in use
      expect(await accounts().changePassword(ann.principal, 'ann', { password: 'new password', current_password: 'old password' }, unlimited, src)).toEqual({
        username: 'ann',
        tokens_revoked: 1,
      });
      await expect(identity().login('ann', 'old password')).rejects.toMatchObject({ code: 'unauthorized' });
      await identity().login('ann', 'new password');
    });

    it("revokes the user's other tokens, never the one in use", async () => {
      const ann = await user('ann', 'developer', 'old password');
      const other = await identity().issueToken('ann', {});
      const result = await accounts().changePassword(ann.principal, 'ann', { password: 'new password', current_password: 'old password' }, unlimited, src);
      expect(result.tokens_revoked).toBeGreaterThanOrEqual(1);
      expect((await store.tokens.get(other.token_id))!.revoked_at).not.toBeNull();
      expect((await store.tokens.get(ann.token_id))!.revoked_at).toBeNull();
      expect(cutOff).toEqual([{ ids: [other.token_id], reason: 'token_revoked' }]);
    });

    it("another user's: an administrator resets it without the current one; anyone else is refused", async () => {
      const admin = await user('root', 'administrator');
      const bob = await user('bob', 'developer');
      await user('ann', 'developer', 'old password');
      expect(
        await rejection(accounts().changePassword(bob.principal, 'ann', { password: 'x', current_password: 'old password' }, unlimited, src)),
      ).toMatchObject({
        code: 'forbidden',
      });
      const annToken = (await store.tokens.list({ username: 'ann', status: 'active', now: new Date(T0).toISOString(), limit: 10, offset: 0 })).items;
      await accounts().changePassword(admin.principal, 'ann', { password: 'reset by root' }, unlimited, src);
      await identity().login('ann', 'reset by root');
      // a reset revokes every token of the user (the administrator's own is not one of them)
      expect(cutOff.at(-1)).toEqual({ ids: annToken.map((t) => t.token_id), reason: 'token_revoked' });
      expect((await store.tokens.get(admin.token_id))!.revoked_at).toBeNull();
    });
  });

  describe('tokens', () => {
    it("lists one's own (marking the one in use); another user's only for an administrator", async () => {
      const admin = await user('root', 'administrator');
      const ann = await user('ann', 'developer');
      const listing = { status: 'active' as const, limit: 10, offset: 0 };
      const own = await listTokens(store, ann.principal, listing, NOW);
      expect(own.items.map((t) => [t.token_id, t.current])).toEqual([[ann.token_id, true]]);
      expect(await rejection(listTokens(store, ann.principal, { ...listing, username: 'root' }, NOW))).toMatchObject({ code: 'forbidden' });
      expect(await rejection(listTokens(store, ann.principal, { ...listing, all: true }, NOW))).toMatchObject({ code: 'forbidden' });
      expect((await listTokens(store, admin.principal, { ...listing, username: 'ann' }, NOW)).items.map((t) => [t.token_id, t.current])).toEqual([
        [ann.token_id, false],
      ]);
    });

    it("revokes one's own token, or any as an administrator; someone else's is a 404 like an unknown one", async () => {
      const admin = await user('root', 'administrator');
      const ann = await user('ann', 'developer');
      const bob = await user('bob', 'developer');
      const theirs = await rejection(accounts().revokeToken(ann.principal, bob.token_id, src));
      const unknown = await rejection(accounts().revokeToken(ann.principal, 'tok_nothing', src));
      expect(theirs).toMatchObject({ code: 'not_found' });
      expect((theirs as Error).message.replace(bob.token_id, 'ID')).toBe((unknown as Error).message.replace('tok_nothing', 'ID'));
      expect((await store.tokens.get(bob.token_id))!.revoked_at).toBeNull();
      expect(cutOff).toEqual([]);

      await accounts().revokeToken(admin.principal, bob.token_id, src);
      await accounts().revokeToken(ann.principal, ann.token_id, src);
      await accounts().revokeToken(ann.principal, ann.token_id, src); // twice is not an error
      expect(cutOff.map((c) => c.ids[0])).toEqual([bob.token_id, ann.token_id, ann.token_id]);
      expect(cutOff.every((c) => c.reason === 'token_revoked')).toBe(true);
    });
  });
});
