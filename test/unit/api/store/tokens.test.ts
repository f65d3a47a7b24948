/** The token repository: looked up by hash only, joined with its user, scopes and tenants round-tripped, revoked once, unknown users refused. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUniqueViolation, openStore, type Store } from '../../../../api/store/index';
import { tempDir } from '../../../helpers/stack';

const created = '2026-01-01T00:00:00.000Z';
const token = (token_id: string, over: Partial<{ username: string; scopes: string[]; tenants: string[]; expires_at: string | null }> = {}) => ({
  token_id, username: 'ann', scopes: ['*'], tenants: [] as string[], created_at: created, expires_at: null as string | null, ...over,
});

describe('token repository', () => {
  let store: Store;
  beforeEach(() => {
    store = openStore(tempDir());
    store.users.insert({ username: 'ann', role: 'platform-engineer', kind: 'human', created_at: created }, null);
    store.users.insert({ username: 'bot', role: null, kind: 'service', created_at: created }, null);
  });
  afterEach(() => store.close());

  it('finds a token by its hash, joined with the role and kind of its user', () => {
    store.tokens.insert(token('tok_a', { expires_at: '2026-01-01T08:00:00.000Z' }), 'hash-a');
    store.tokens.insert(token('tok_b', { username: 'bot' }), 'hash-b');
    expect(store.tokens.findByHash('hash-a')).toEqual({
      token_id: 'tok_a', username: 'ann', role: 'platform-engineer', kind: 'human', scopes: ['*'], tenants: [],
      created_at: created, expires_at: '2026-01-01T08:00:00.000Z', revoked_at: null,
    });
    expect(store.tokens.findByHash('hash-b')).toMatchObject({ token_id: 'tok_b', role: null, kind: 'service', expires_at: null });
    expect(store.tokens.findByHash('tok_a')).toBeUndefined(); // the id is no credential
    expect(store.tokens.findByHash('nope')).toBeUndefined();
  });

  it('round-trips scopes and tenants as lists, order kept', () => {
    store.tokens.insert(token('tok_f', { scopes: ['fleet:write', 'fleet:read'], tenants: ['globex', 'acme', '*'] }), 'hash-f');
    store.tokens.insert(token('tok_e', { scopes: [], tenants: [] }), 'hash-e');
    expect(store.tokens.findByHash('hash-f')).toMatchObject({ scopes: ['fleet:write', 'fleet:read'], tenants: ['globex', 'acme', '*'] });
    expect(store.tokens.findByHash('hash-e')).toMatchObject({ scopes: [], tenants: [] });
  });

  it('refuses a token id or a hash used twice, and a token of an unknown user', () => {
    store.tokens.insert(token('tok_a'), 'hash-a');
    const failure = (fn: () => void) => {
      try {
        fn();
      } catch (err) {
        return err;
      }
      throw new Error('expected the insert to fail');
    };
    expect(isUniqueViolation(failure(() => store.tokens.insert(token('tok_a'), 'hash-other')))).toBe(true);
    expect(isUniqueViolation(failure(() => store.tokens.insert(token('tok_other'), 'hash-a')))).toBe(true);
    expect(String(failure(() => store.tokens.insert(token('tok_x', { username: 'ghost' }), 'hash-x')))).toMatch(/FOREIGN KEY/);
    expect(store.tokens.exists('tok_other')).toBe(false);
  });

  it('revokes a token once; a revoked token is still found, with when it was revoked', () => {
    store.tokens.insert(token('tok_a'), 'hash-a');
    expect(store.tokens.revoke('tok_a', '2026-01-01T01:00:00.000Z')).toBe(true);
    expect(store.tokens.revoke('tok_a', '2026-01-01T02:00:00.000Z')).toBe(false); // already revoked: the first time stands
    expect(store.tokens.revoke('tok_unknown', '2026-01-01T02:00:00.000Z')).toBe(false);
    expect(store.tokens.findByHash('hash-a')?.revoked_at).toBe('2026-01-01T01:00:00.000Z');
    expect(store.tokens.exists('tok_a')).toBe(true);
  });

  it('says whether a token id exists', () => {
    store.tokens.insert(token('tok_a'), 'hash-a');
    expect(store.tokens.exists('tok_a')).toBe(true);
    expect(store.tokens.exists('tok_b')).toBe(false);
  });
});
