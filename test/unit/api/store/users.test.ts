/** The user repository: unique names, roles limited to the catalogue (or none), password hashes never listed, names in order. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUniqueViolation, openStore, type Store } from '../../../../api/store/index';
import type { Role } from '../../../../api/roles';
import { tempDir } from '../../../helpers/stack';

const at = '2026-01-01T00:00:00.000Z';

describe('user repository', () => {
  let store: Store;
  beforeEach(() => {
    store = openStore(tempDir());
  });
  afterEach(() => store.close());

  it('stores a user with its password hash and reads it back', () => {
    store.users.insert({ username: 'ann', role: 'platform-engineer', kind: 'human', created_at: at }, 'scrypt$abc');
    store.users.insert({ username: 'ci-bot', role: null, kind: 'service', created_at: at }, null);
    expect(store.users.get('ann')).toEqual({ username: 'ann', role: 'platform-engineer', kind: 'human', password_hash: 'scrypt$abc', created_at: at });
    expect(store.users.get('ci-bot')).toEqual({ username: 'ci-bot', role: null, kind: 'service', password_hash: null, created_at: at });
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
});
