/**
 * The token repository: looked up by hash only, joined with its user (and whether it is
 * disabled), scopes and tenants round-tripped, revoked once, unknown users refused; listings by
 * user and status, newest first, never with the hash; a user's tokens revoked together.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { isUniqueViolation, type Store } from '../../../../api/store/index';
import { failure, onPostgres, storeForEachTest } from '../../../helpers/store';

const created = '2026-01-01T00:00:00.000Z';
const token = (
  token_id: string,
  over: Partial<{ username: string; scopes: string[]; tenants: string[]; created_at: string; expires_at: string | null }> = {},
) => ({
  token_id,
  username: 'ann',
  scopes: ['*'],
  tenants: [] as string[],
  created_at: created,
  expires_at: null as string | null,
  ...over,
});

describe('token repository', () => {
  const store = storeForEachTest();
  beforeEach(async () => {
    await store.users.insert({ username: 'ann', role: 'platform-engineer', kind: 'human', created_at: created }, null);
    await store.users.insert({ username: 'bot', role: null, kind: 'service', created_at: created }, null);
  });

  it('finds a token by its hash, joined with the role and kind of its user', async () => {
    await store.tokens.insert(token('tok_a', { expires_at: '2026-01-01T08:00:00.000Z' }), 'hash-a');
    await store.tokens.insert(token('tok_b', { username: 'bot' }), 'hash-b');
    expect(await store.tokens.findByHash('hash-a')).toEqual({
      token_id: 'tok_a',
      username: 'ann',
      role: 'platform-engineer',
      kind: 'human',
      scopes: ['*'],
      tenants: [],
      created_at: created,
      expires_at: '2026-01-01T08:00:00.000Z',
      revoked_at: null,
      user_disabled: false,
    });
    expect(await store.tokens.findByHash('hash-b')).toMatchObject({ token_id: 'tok_b', role: null, kind: 'service', expires_at: null });
    expect(await store.tokens.findByHash('tok_a')).toBeUndefined(); // the id is no credential
    expect(await store.tokens.findByHash('nope')).toBeUndefined();
  });

  it('round-trips scopes and tenants as lists, order kept', async () => {
    await store.tokens.insert(token('tok_f', { scopes: ['fleet:write', 'fleet:read'], tenants: ['globex', 'acme', '*'] }), 'hash-f');
    await store.tokens.insert(token('tok_e', { scopes: [], tenants: [] }), 'hash-e');
    expect(await store.tokens.findByHash('hash-f')).toMatchObject({ scopes: ['fleet:write', 'fleet:read'], tenants: ['globex', 'acme', '*'] });
    expect(await store.tokens.findByHash('hash-e')).toMatchObject({ scopes: [], tenants: [] });
  });

  it('refuses a token id or a hash used twice, and a token of an unknown user', async () => {
    await store.tokens.insert(token('tok_a'), 'hash-a');
    expect(isUniqueViolation(await failure(() => store.tokens.insert(token('tok_a'), 'hash-other')))).toBe(true);
    expect(isUniqueViolation(await failure(() => store.tokens.insert(token('tok_other'), 'hash-a')))).toBe(true);
    const ghost = await failure(() => store.tokens.insert(token('tok_x', { username: 'ghost' }), 'hash-x'));
    expect((ghost as { code?: string }).code).toBe(onPostgres ? '23503' : 'SQLITE_CONSTRAINT_FOREIGNKEY');
    expect(String(ghost)).toMatch(/FOREIGN KEY|foreign key/);
    expect(await store.tokens.get('tok_other')).toBeUndefined();
  });

  it('revokes a token once; a revoked token is still found, with when it was revoked', async () => {
    await store.tokens.insert(token('tok_a'), 'hash-a');
    expect(await store.tokens.revoke('tok_a', '2026-01-01T01:00:00.000Z')).toBe(true);
    expect(await store.tokens.revoke('tok_a', '2026-01-01T02:00:00.000Z')).toBe(false); // already revoked: the first time stands
    expect(await store.tokens.revoke('tok_unknown', '2026-01-01T02:00:00.000Z')).toBe(false);
    expect((await store.tokens.findByHash('hash-a'))?.revoked_at).toBe('2026-01-01T01:00:00.000Z');
    expect((await store.tokens.get('tok_a'))?.revoked_at).toBe('2026-01-01T01:00:00.000Z');
  });

  it('reads a token by id, without its hash', async () => {
    await store.tokens.insert(token('tok_a', { scopes: ['fleet:read'], tenants: ['acme'] }), 'hash-a');
    expect(await store.tokens.get('tok_a')).toEqual({
      token_id: 'tok_a',
      username: 'ann',
      scopes: ['fleet:read'],
      tenants: ['acme'],
      created_at: created,
      expires_at: null,
      revoked_at: null,
    });
    expect(await store.tokens.get('tok_b')).toBeUndefined();
    expect(await store.tokens.get('hash-a')).toBeUndefined();
  });

  it('says when the user of a token is disabled or deleted', async () => {
    await store.tokens.insert(token('tok_a'), 'hash-a');
    await store.users.update('ann', { disabled: true });
    expect(await store.tokens.findByHash('hash-a')).toMatchObject({ token_id: 'tok_a', user_disabled: true });
    await store.users.update('ann', { disabled: false });
    expect(await store.tokens.findByHash('hash-a')).toMatchObject({ user_disabled: false });
    await store.users.markDeleted('ann', created);
    expect(await store.tokens.findByHash('hash-a')).toMatchObject({ user_disabled: true });
  });

  describe('listing', () => {
    const now = '2026-01-01T12:00:00.000Z';
    const at = (h: number) => `2026-01-01T${String(h).padStart(2, '0')}:00:00.000Z`;
    beforeEach(async () => {
      await store.tokens.insert(token('tok_active', { created_at: at(1), expires_at: at(13) }), 'h1');
      await store.tokens.insert(token('tok_forever', { created_at: at(2) }), 'h2');
      await store.tokens.insert(token('tok_expired', { created_at: at(3), expires_at: at(11) }), 'h3');
      await store.tokens.insert(token('tok_revoked', { created_at: at(4), expires_at: at(13) }), 'h4');
      await store.tokens.insert(token('tok_both', { created_at: at(5), expires_at: at(6) }), 'h5');
      await store.tokens.insert(token('tok_bot', { username: 'bot', created_at: at(6) }), 'h6');
      await store.tokens.insert(token('tok_now', { created_at: at(7), expires_at: now }), 'h7'); // expires this very moment
      await store.tokens.revoke('tok_revoked', at(8));
      await store.tokens.revoke('tok_both', at(9));
    });
    const ids = async (q: Partial<Parameters<Store['tokens']['list']>[0]>) =>
      (await store.tokens.list({ status: 'all', now, limit: 100, offset: 0, ...q })).items.map((t) => t.token_id);

    it('filters by status at the time given; a revoked token that also expired is revoked', async () => {
      expect(await ids({ username: 'ann', status: 'active' })).toEqual(['tok_forever', 'tok_active']);
      expect(await ids({ username: 'ann', status: 'revoked' })).toEqual(['tok_both', 'tok_revoked']);
      expect(await ids({ username: 'ann', status: 'expired' })).toEqual(['tok_now', 'tok_expired']);
      expect(await ids({ username: 'ann', status: 'all' })).toEqual(['tok_now', 'tok_both', 'tok_revoked', 'tok_expired', 'tok_forever', 'tok_active']);
      expect(await ids({ username: 'ann', status: 'active', now: at(0) })).toEqual(['tok_now', 'tok_expired', 'tok_forever', 'tok_active']);
    });

    it("lists one user's tokens or everyone's, newest first, a page at a time with the total", async () => {
      expect(await ids({ username: 'bot' })).toEqual(['tok_bot']);
      expect(await ids({ username: 'nobody' })).toEqual([]);
      expect(await ids({ status: 'active' })).toEqual(['tok_bot', 'tok_forever', 'tok_active']);
      const page = await store.tokens.list({ username: 'ann', status: 'all', now, limit: 2, offset: 2 });
      expect(page.items.map((t) => t.token_id)).toEqual(['tok_revoked', 'tok_expired']);
      expect(page.total).toBe(6);
      expect(await store.tokens.list({ status: 'all', now, limit: 2, offset: 100 })).toEqual({ items: [], total: 7 });
    });

    it('shows the record and never the hash', async () => {
      const [bot] = (await store.tokens.list({ username: 'bot', status: 'all', now, limit: 1, offset: 0 })).items;
      expect(bot).toEqual({
        token_id: 'tok_bot',
        username: 'bot',
        scopes: ['*'],
        tenants: [],
        created_at: at(6),
        expires_at: null,
        revoked_at: null,
      });
      expect(JSON.stringify(await store.tokens.list({ status: 'all', now, limit: 100, offset: 0 }))).not.toMatch(/\bh[1-7]\b|hash/);
    });
  });

  it('revokes every unrevoked token of a user but the one kept, and says which', async () => {
    for (const id of ['tok_a', 'tok_b', 'tok_c', 'tok_old']) await store.tokens.insert(token(id), `hash-${id}`);
    await store.tokens.insert(token('tok_bot', { username: 'bot' }), 'hash-bot');
    await store.tokens.revoke('tok_old', '2026-01-01T01:00:00.000Z');
    expect(await store.tokens.unrevokedIdsOf('ann')).toEqual(['tok_a', 'tok_b', 'tok_c']);
    expect(await store.tokens.revokeAllOf('ann', '2026-01-01T02:00:00.000Z', 'tok_b')).toEqual(['tok_a', 'tok_c']);
    expect(await store.tokens.unrevokedIdsOf('ann')).toEqual(['tok_b']);
    expect((await store.tokens.get('tok_old'))?.revoked_at).toBe('2026-01-01T01:00:00.000Z'); // the first revocation stands
    expect(await store.tokens.revokeAllOf('ann', '2026-01-01T03:00:00.000Z')).toEqual(['tok_b']);
    expect(await store.tokens.revokeAllOf('ann', '2026-01-01T04:00:00.000Z')).toEqual([]);
    expect(await store.tokens.unrevokedIdsOf('bot')).toEqual(['tok_bot']); // other users untouched
  });
});
