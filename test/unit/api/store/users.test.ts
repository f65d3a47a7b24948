/**
 * The user repository: unique names, roles limited to the catalogue (or none), password hashes
 * never listed, names in order; changes, deletion that keeps the name taken, and the database's
 * rule that an enabled administrator is always left.
 */
import { describe, expect, it } from 'vitest';
import { isUniqueViolation } from '../../../../api/store/index';
import { isLastAdministratorViolation } from '../../../../api/store/users';
import type { Role } from '../../../../api/roles';
import { failure, storeForEachTest } from '../../../helpers/store';

const at = '2026-01-01T00:00:00.000Z';

describe('user repository', () => {
  const store = storeForEachTest();

  it('stores a user with its password hash and reads it back', () => {
    store.users.insert({ username: 'ann', role: 'platform-engineer', kind: 'human', created_at: at }, 'scrypt$abc');
    store.users.insert({ username: 'ci-bot', role: null, kind: 'service', created_at: at }, null);
    expect(store.users.get('ann')).toEqual({
      username: 'ann',
      role: 'platform-engineer',
      kind: 'human',
      disabled: false,
      password_hash: 'scrypt$abc',
      created_at: at,
    });
    expect(store.users.get('ci-bot')).toEqual({ username: 'ci-bot', role: null, kind: 'service', disabled: false, password_hash: null, created_at: at });
    expect(store.users.get('nobody')).toBeUndefined();
  });

  it('refuses a second user of the same name with a primary-key violation', () => {
    store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, null);
    let err: unknown;
    try {
      store.users.insert({ username: 'ann', role: 'administrator', kind: 'human', created_at: at }, null);
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(isUniqueViolation(err)).toBe(true);
    expect(store.users.get('ann')?.role).toBe('developer');
  });

  it('refuses a role or kind outside the catalogue', () => {
    expect(() => store.users.insert({ username: 'x', role: 'root' as Role, kind: 'human', created_at: at }, null)).toThrow(/CHECK/);
    expect(() => store.users.insert({ username: 'y', role: null, kind: 'robot' as 'human', created_at: at }, null)).toThrow(/CHECK/);
    expect(store.users.count()).toBe(0);
  });

  it('lists users by name without their password hashes, and counts them', () => {
    for (const username of ['carol', 'ann', 'bob']) store.users.insert({ username, role: 'developer', kind: 'human', created_at: at }, `hash-${username}`);
    const listed = store.users.list();
    expect(listed.map((u) => u.username)).toEqual(['ann', 'bob', 'carol']);
    for (const u of listed) expect(u).not.toHaveProperty('password_hash');
    expect(store.users.count()).toBe(3);
  });

  it('changes a role, the disabled flag or both, and leaves what is not given', () => {
    store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, 'hash-ann');
    expect(store.users.update('ann', { disabled: true })).toEqual({ username: 'ann', role: 'developer', kind: 'human', disabled: true, created_at: at });
    expect(store.users.update('ann', { role: 'platform-engineer' })).toMatchObject({ role: 'platform-engineer', disabled: true });
    expect(store.users.update('ann', { role: null, disabled: false })).toMatchObject({ role: null, disabled: false });
    expect(store.users.get('ann')).toMatchObject({ role: null, disabled: false, password_hash: 'hash-ann' });
    expect(store.users.update('nobody', { disabled: true })).toBeUndefined();
    expect(() => store.db.prepare("UPDATE users SET disabled = 2 WHERE username = 'ann'").run()).toThrow(/CHECK/);
  });

  it('lists disabled users with their flag', () => {
    for (const username of ['ann', 'bob']) store.users.insert({ username, role: 'developer', kind: 'human', created_at: at }, null);
    store.users.update('bob', { disabled: true });
    expect(store.users.list().map((u) => [u.username, u.disabled])).toEqual([
      ['ann', false],
      ['bob', true],
    ]);
  });

  it('a deleted user is gone from every read but keeps its name taken, and loses its password', () => {
    store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, 'hash-ann');
    expect(store.users.wasDeleted('ann')).toBe(false);
    expect(store.users.markDeleted('ann', at)).toBe(true);
    expect(store.users.markDeleted('ann', at)).toBe(false); // once
    expect(store.users.get('ann')).toBeUndefined();
    expect(store.users.list()).toEqual([]);
    expect(store.users.update('ann', { disabled: true })).toBeUndefined();
    expect(store.users.setPasswordHash('ann', 'hash-new')).toBe(false);
    expect(store.users.wasDeleted('ann')).toBe(true);
    expect(store.users.count()).toBe(1); // a data dir with only deleted users is not empty: no second bootstrap
    expect(store.db.prepare("SELECT password_hash, deleted_at FROM users WHERE username = 'ann'").get()).toEqual({ password_hash: null, deleted_at: at });
    expect(isUniqueViolation(failure(() => store.users.insert({ username: 'ann', role: null, kind: 'human', created_at: at }, null)))).toBe(true);
  });

  it('replaces a password hash', () => {
    store.users.insert({ username: 'ann', role: 'developer', kind: 'human', created_at: at }, 'hash-old');
    expect(store.users.setPasswordHash('ann', 'hash-new')).toBe(true);
    expect(store.users.get('ann')?.password_hash).toBe('hash-new');
    expect(store.users.setPasswordHash('nobody', 'hash-new')).toBe(false);
  });

  it('refuses to disable, demote or delete the last enabled administrator, in any way', () => {
    store.users.insert({ username: 'root', role: 'administrator', kind: 'service', created_at: at }, null);
    store.users.insert({ username: 'ops', role: 'administrator', kind: 'human', created_at: at }, null);
    store.users.insert({ username: 'dev', role: 'developer', kind: 'human', created_at: at }, null);
    // with two, either may go
    expect(store.users.update('ops', { disabled: true })).toMatchObject({ disabled: true });
    // now root is the last enabled one: a disabled administrator does not count
    for (const change of [
      () => store.users.update('root', { disabled: true }),
      () => store.users.update('root', { role: 'developer' }),
      () => store.users.update('root', { role: null }),
      () => store.users.markDeleted('root', at),
      () => store.db.prepare("DELETE FROM users WHERE username = 'root'").run(),
    ]) {
      const err = failure(change);
      expect(isLastAdministratorViolation(err), String(err)).toBe(true);
    }
    expect(store.users.get('root')).toMatchObject({ role: 'administrator', disabled: false });
    // changes that keep it an enabled administrator, and changes to others, pass
    expect(store.users.update('root', { role: 'administrator', disabled: false })).toMatchObject({ role: 'administrator' });
    expect(store.users.update('dev', { disabled: true })).toMatchObject({ disabled: true });
    // a deleted administrator does not count either
    store.users.update('ops', { disabled: false });
    store.users.markDeleted('ops', at);
    expect(isLastAdministratorViolation(failure(() => store.users.update('root', { disabled: true })))).toBe(true);
    // once another is promoted, root may step down
    store.users.update('dev', { role: 'administrator', disabled: false });
    expect(store.users.update('root', { role: 'developer' })).toMatchObject({ role: 'developer' });
    expect(isLastAdministratorViolation(new Error('last enabled administrator'))).toBe(false);
  });
});
