/**
 * The bearer-token resolver (api/identity/token-cache.ts) on a real SQLite store, with its
 * monotonic clock driven by the test: a token is looked up once per few seconds, but revocation
 * and changes to its user take effect at once (they are told to the resolver), and expiry is
 * checked on every use.
 */
import { describe, expect, it } from 'vitest';
import { createIdentity } from '../../../../api/identity/identity';
import { createTokenResolver } from '../../../../api/identity/token-cache';
import { sha256Hex } from '../../../../shared/ids';
import { storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

describe('token resolver', () => {
  const store = storeForEachTest();

  async function setUp() {
    const identity = createIdentity(store, () => T0);
    await identity.createUser({ username: 'ann', role: 'developer', kind: 'service' });
    const issued = identity.issueToken('ann', { ttl_seconds: 60, scopes: ['devices:read'] });
    let mono = 0;
    const resolver = createTokenResolver(store.tokens, () => mono);
    return { issued, resolver, advance: (ms: number) => void (mono += ms) };
  }

  it('resolves a token, or its digest as a cluster node sends it, to its principal; nothing else', async () => {
    const { issued, resolver } = await setUp();
    expect(resolver.resolve(issued.token, T0)).toMatchObject({ token_id: issued.token_id, username: 'ann', role: 'developer', scopes: ['devices:read'] });
    expect(resolver.resolveHash(sha256Hex(issued.token), T0)).toMatchObject({ token_id: issued.token_id });
    expect(resolver.resolve('tth_guess', T0)).toBeUndefined();
    expect(resolver.resolveHash(issued.token, T0)).toBeUndefined(); // the raw token is no digest
  });

  it('remembers a lookup a few seconds: a change nobody told it of shows only after that', async () => {
    const { issued, resolver, advance } = await setUp();
    resolver.resolve(issued.token, T0);
    store.tokens.revoke(issued.token_id, new Date(T0).toISOString()); // behind its back
    advance(4_000);
    expect(resolver.resolve(issued.token, T0)).toBeDefined();
    advance(2_000);
    expect(resolver.resolve(issued.token, T0)).toBeUndefined();
  });

  it('forgets a revoked token at once when told', async () => {
    const { issued, resolver } = await setUp();
    resolver.resolve(issued.token, T0);
    store.tokens.revoke(issued.token_id, new Date(T0).toISOString());
    resolver.revoked(issued.token_id);
    expect(resolver.resolve(issued.token, T0)).toBeUndefined();
  });

  it('forgets every token of a user at once when the user changed (disabled here)', async () => {
    const { issued, resolver } = await setUp();
    const byHash = sha256Hex(issued.token);
    resolver.resolve(issued.token, T0);
    resolver.resolveHash(byHash, T0);
    store.users.update('ann', { disabled: true });
    resolver.userChanged('ann');
    expect(resolver.resolve(issued.token, T0)).toBeUndefined();
    expect(resolver.resolveHash(byHash, T0)).toBeUndefined();
  });

  it('checks expiry on every use, remembered or not', async () => {
    const { issued, resolver } = await setUp();
    expect(resolver.resolve(issued.token, T0 + 59_999)).toBeDefined();
    expect(resolver.resolve(issued.token, T0 + 60_000)).toBeUndefined();
  });
});
