/**
 * The user repository: unique names, roles limited to the catalogue (or none), password hashes
 * never listed, names in order; changes, deletion that keeps the name taken, and the database's
 * rule that an enabled administrator is always left.
 */
import { describe, expect, it } from 'vitest';
import { isUniqueViolation } from '../../../../api/store/index';
import { isLastAdministratorViolation } from '../../../../api/store/errors';
import type { Role } from '../../../../api/roles';
import { failure, onPostgres, storeForEachTest } from '../../../helpers/store';

const at = '2026-01-01T00:00:00.000Z';

/** True when `err` is a CHECK constraint refusing a row, as the store under test reports it. */
function isCheckViolation(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  return code === (onPostgres ? '23514' : 'SQLITE_CONSTRAINT_CHECK') && /CHECK|check constraint/.test(String(err));
}

describe('user repository', () => {
  const store = storeForEachTest();

  it('stores a user with its password hash and reads it back', async () => {
    await store.users.insert({ username: 'ann', role: 'platform-engineer', kind: 'human', created_at: at }, 'scrypt$abc');
    await store.users.insert({ username: 'ci-bot', role: null, kind: 'service', created_at: at }, null);
    expect(await store.users.get('ann')).toEqual({
      username: 'ann',
      role: 'platform-engineer',
      kind: 'human',
      disabled: false,
      password_hash: 'scrypt$abc',
      created_at: at,
    });
    expect(await store.users.get('ci-bot')).toEqual({ username: 'ci-bot', role: null, kind: 'service', disabled: false, password_hash: null, created_at: at });
    expect(await store.users.get('nobody')).toBeUndefined();
  });

  it('refuses a second user of the same name with a primary-key violation', async () => {
    await store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, null);
    const err = await failure(() => store.users.insert({ username: 'ann', role: 'administrator', kind: 'human', created_at: at }, null));
    expect((err as { code?: string }).code).toBe(onPostgres ? '23505' : 'SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(isUniqueViolation(err)).toBe(true);
    expect((await store.users.get('ann'))?.role).toBe('developer');
  });

  it('refuses a role or kind outside the catalogue', async () => {
    const badRole = await failure(() => store.users.insert({ username: 'x', role: 'root' as Role, kind: 'human', created_at: at }, null));
    const badKind = await failure(() => store.users.insert({ username: 'y', role: null, kind: 'robot' as 'human', created_at: at }, null));
    expect(isCheckViolation(badRole), String(badRole)).toBe(true);
    expect(isCheckViolation(badKind), String(badKind)).toBe(true);
    expect(await store.users.count()).toBe(0);
  });

  it('lists users by name without their password hashes, and counts them', async () => {
    for (const username of ['carol', 'ann', 'bob'])
      await store.users.insert({ username, role: 'developer', kind: 'human', created_at: at }, `hash-${username}`);
    const listed = await store.users.list();
    expect(listed.map((u) => u.username)).toEqual(['ann', 'bob', 'carol']);
    for (const u of listed) expect(u).not.toHaveProperty('password_hash');
    expect(await store.users.count()).toBe(3);
  });

  it('changes a role, the disabled flag or both, and leaves what is not given', async () => {
    await store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, 'hash-ann');
    expect(await store.users.update('ann', { disabled: true })).toEqual({ username: 'ann', role: 'developer', kind: 'human', disabled: true, created_at: at });
    expect(await store.users.update('ann', { role: 'platform-engineer' })).toMatchObject({ role: 'platform-engineer', disabled: true });
    expect(await store.users.update('ann', { role: null, disabled: false })).toMatchObject({ role: null, disabled: false });
    expect(await store.users.update('ann', {})).toMatchObject({ role: null, disabled: false });
    expect(await store.users.get('ann')).toMatchObject({ role: null, disabled: false, password_hash: 'hash-ann' });
    expect(await store.users.update('nobody', { disabled: true })).toBeUndefined();
    const notAFlag = await failure(() => store.db.updateTable('users').set({ disabled: 2 }).where('username', '=', 'ann').execute());
    expect(isCheckViolation(notAFlag), String(notAFlag)).toBe(true);
  });

  it('lists disabled users with their flag', async () => {
    for (const username of ['ann', 'bob']) await store.users.insert({ username, role: 'developer', kind: 'human', created_at: at }, null);
    await store.users.update('bob', { disabled: true });
    expect((await store.users.list()).map((u) => [u.username, u.disabled])).toEqual([
      ['ann', false],
      ['bob', true],
    ]);
  });

  it('a deleted user is gone from every read but keeps its name taken, and loses its password', async () => {
    await store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, 'hash-ann');
    expect(await store.users.wasDeleted('ann')).toBe(false);
    expect(await store.users.markDeleted('ann', at)).toBe(true);
    expect(await store.users.markDeleted('ann', at)).toBe(false); // once
    expect(await store.users.get('ann')).toBeUndefined();
    expect(await store.users.list()).toEqual([]);
    expect(await store.users.update('ann', { disabled: true })).toBeUndefined();
    expect(await store.users.setPasswordHash('ann', 'hash-new')).toBe(false);
    expect(await store.users.wasDeleted('ann')).toBe(true);
    expect(await store.users.count()).toBe(1); // a database with only deleted users is not empty: no second bootstrap
    expect(await store.db.selectFrom('users').select(['password_hash', 'deleted_at']).where('username', '=', 'ann').executeTakeFirst()).toEqual({
      password_hash: null,
      deleted_at: at,
    });
    expect(isUniqueViolation(await failure(() => store.users.insert({ username: 'ann', role: null, kind: 'human', created_at: at }, null)))).toBe(true);
  });

  it('replaces a password hash', async () => {
    await store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, 'hash-old');
    expect(await store.users.setPasswordHash('ann', 'hash-new')).toBe(true);
    expect((await store.users.get('ann'))?.password_hash).toBe('hash-new');
    expect(await store.users.setPasswordHash('nobody', 'hash-new')).toBe(false);
  });

  it('refuses to disable, demote or delete the last enabled administrator, in any way', async () => {
    await store.users.insert({ username: 'root', role: 'administrator', kind: 'service', created_at: at }, null);
    await store.users.insert({ username: 'ops', role: 'administrator', kind: 'human', created_at: at }, null);
    await store.users.insert({ username: 'dev', role: 'developer', kind: 'human', created_at: at }, null);
    // with two, either may go
    expect(await store.users.update('ops', { disabled: true })).toMatchObject({ disabled: true });
    // now root is the last enabled one: a disabled administrator does not count
    for (const change of [
      () => store.users.update('root', { disabled: true }),
      () => store.users.update('root', { role: 'developer' }),
      () => store.users.update('root', { role: null }),
      () => store.users.markDeleted('root', at),
      () => store.db.deleteFrom('users').where('username', '=', 'root').execute(),
    ]) {
      const err = await failure(change);
      expect(isLastAdministratorViolation(err), String(err)).toBe(true);
    }
    expect(await store.users.get('root')).toMatchObject({ role: 'administrator', disabled: false });
    // changes that keep it an enabled administrator, and changes to others, pass
    expect(await store.users.update('root', { role: 'administrator', disabled: false })).toMatchObject({ role: 'administrator' });
    expect(await store.users.update('dev', { disabled: true })).toMatchObject({ disabled: true });
    // a deleted administrator does not count either
    await store.users.update('ops', { disabled: false });
    await store.users.markDeleted('ops', at);
    expect(isLastAdministratorViolation(await failure(() => store.users.update('root', { disabled: true })))).toBe(true);
    // once another is promoted, root may step down
    await store.users.update('dev', { role: 'administrator', disabled: false });
    expect(await store.users.update('root', { role: 'developer' })).toMatchObject({ role: 'developer' });
    expect(isLastAdministratorViolation(new Error('last enabled administrator'))).toBe(false);
  });

  it('keeps an enabled administrator when two are taken away at once', async () => {
    await store.users.insert({ username: 'root', role: 'administrator', kind: 'service', created_at: at }, null);
    await store.users.insert({ username: 'ops', role: 'administrator', kind: 'human', created_at: at }, null);
    const outcomes = await Promise.allSettled([store.users.update('root', { disabled: true }), store.users.update('ops', { role: 'developer' })]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const refused = outcomes.find((o) => o.status === 'rejected');
    expect(isLastAdministratorViolation(refused?.reason), String(refused?.reason)).toBe(true);
    const enabledAdministrators = (await store.users.list()).filter((u) => u.role === 'administrator' && !u.disabled);
    expect(enabledAdministrators).toHaveLength(1);
  });
});
