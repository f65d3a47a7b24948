/**
 * The bearer-token resolver (api/identity/token-cache.ts) on a real store (SQLite, or
 * PostgreSQL), with its monotonic clock driven by the test: a token is looked up once per few
 * seconds (requests that miss together share the lookup), but revocation and changes to its user
 * take effect at once (they are told to the resolver), even on a lookup still in flight, and
 * expiry is checked on every use.
 */
import { describe, expect, it } from 'vitest';
import { createIdentity } from '../../../../api/identity/identity';
import { createTokenResolver } from '../../../../api/identity/token-cache';
import type { TokenRepo } from '../../../../api/store/tokens';
import { sha256Hex } from '../../../../shared/ids';
import { storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

describe('token resolver', () => {
  const store = storeForEachTest();

  async function setUp() {
    const identity = createIdentity(store, () => T0);
    await identity.createUser({ username: 'ann', role: 'developer', kind: 'service' });
    const issued = await identity.issueToken('ann', { ttl_seconds: 60, scopes: ['devices:read'] });
    let mono = 0;
    const resolver = createTokenResolver(store.tokens, () => mono);
    return { issued, resolver, advance: (ms: number) => void (mono += ms) };
  }

  it('resolves a token, or its digest as a cluster node sends it, to its principal; nothing else', async () => {
    const { issued, resolver } = await setUp();
    expect(await resolver.resolve(issued.token, T0)).toMatchObject({ token_id: issued.token_id, username: 'ann', role: 'developer', scopes: ['devices:read'] });
    expect(await resolver.resolveHash(sha256Hex(issued.token), T0)).toMatchObject({ token_id: issued.token_id });
    expect(await resolver.resolve('tth_guess', T0)).toBeUndefined();
    expect(await resolver.resolveHash(issued.token, T0)).toBeUndefined(); // the raw token is no digest
  });

  it('remembers a lookup a few seconds: a change nobody told it of shows only after that', async () => {
    const { issued, resolver, advance } = await setUp();
    await resolver.resolve(issued.token, T0);
    await store.tokens.revoke(issued.token_id, new Date(T0).toISOString()); // behind its back
    advance(4_000);
    expect(await resolver.resolve(issued.token, T0)).toBeDefined();
    advance(2_000);
    expect(await resolver.resolve(issued.token, T0)).toBeUndefined();
  });

  it('forgets a revoked token at once when told', async () => {
    const { issued, resolver } = await setUp();
    await resolver.resolve(issued.token, T0);
    await store.tokens.revoke(issued.token_id, new Date(T0).toISOString());
    resolver.revoked(issued.token_id);
    expect(await resolver.resolve(issued.token, T0)).toBeUndefined();
  });

  it('forgets every token of a user at once when the user changed (disabled here)', async () => {
    const { issued, resolver } = await setUp();
    const byHash = sha256Hex(issued.token);
    await resolver.resolve(issued.token, T0);
    await resolver.resolveHash(byHash, T0);
    await store.users.update('ann', { disabled: true });
    resolver.userChanged('ann');
    expect(await resolver.resolve(issued.token, T0)).toBeUndefined();
    expect(await resolver.resolveHash(byHash, T0)).toBeUndefined();
  });

  it('checks expiry on every use, remembered or not', async () => {
    const { issued, resolver } = await setUp();
    expect(await resolver.resolve(issued.token, T0 + 59_999)).toBeDefined();
    expect(await resolver.resolve(issued.token, T0 + 60_000)).toBeUndefined();
  });

  /** The store's lookups, counted, each held back until `release` when `hold` is set. */
  function counted() {
    const calls: string[] = [];
    let gate: Promise<void> | undefined;
    let release = () => {};
    const tokens: Pick<TokenRepo, 'findByHash'> = {
      async findByHash(hash) {
        calls.push(hash);
        const found = await store.tokens.findByHash(hash);
        await gate;
        return found;
      },
    };
    const hold = () => {
      gate = new Promise<void>((resolve) => (release = resolve));
    };
    return { tokens, calls, hold, release: () => release() };
  }

  it('looks a token up once for requests that miss together', async () => {
    const { issued } = await setUp();
    const { tokens, calls } = counted();
    const resolver = createTokenResolver(tokens, () => 0);
    const all = await Promise.all([1, 2, 3].map(() => resolver.resolve(issued.token, T0)));
    expect(all.map((p) => p?.token_id)).toEqual([issued.token_id, issued.token_id, issued.token_id]);
    expect(calls).toHaveLength(1);
  });

  it('does not keep a lookup that was in flight when the token was revoked', async () => {
    const { issued } = await setUp();
    const { tokens, calls, hold, release } = counted();
    const resolver = createTokenResolver(tokens, () => 0);
    hold();
    const inFlight = resolver.resolve(issued.token, T0);
    await store.tokens.revoke(issued.token_id, new Date(T0).toISOString());
    resolver.revoked(issued.token_id);
    release();
    await inFlight; // it raced the revocation: either answer is fair
    expect(await resolver.resolve(issued.token, T0)).toBeUndefined();
    expect(calls).toHaveLength(2);
  });

  it('does not keep a lookup that failed', async () => {
    const { issued } = await setUp();
    let fail = true;
    const resolver = createTokenResolver(
      {
        findByHash: async (hash) => {
          if (fail) throw new Error('the database did not answer');
          return store.tokens.findByHash(hash);
        },
      },
      () => 0,
    );
    await expect(resolver.resolve(issued.token, T0)).rejects.toThrow('did not answer');
    fail = false;
    expect(await resolver.resolve(issued.token, T0)).toMatchObject({ token_id: issued.token_id });
  });
});
