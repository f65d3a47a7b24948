/** The idempotency key store: claims, replays, other requests, expiry after 24 hours, and claims a stopped run left. */
import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_TTL_MS } from '../../../../api/store/idempotency';
import { storeForEachTest } from '../../../helpers/store';

describe('idempotency keys', () => {
  const store = storeForEachTest();
  const t0 = Date.parse('2026-11-24T12:00:00Z');
  const response = { status: 201, headers: { etag: '"x"' }, body: { status: 201, data: { id: 1 } } };

  it('claims a key once; the same request waits, then replays; another request is refused', async () => {
    const keys = store.idempotency;
    expect(await keys.begin('ana', 'k1', 'fp-a', t0)).toEqual({ kind: 'claimed' });
    expect(await keys.begin('ana', 'k1', 'fp-a', t0 + 5)).toEqual({ kind: 'in_progress' });
    expect(await keys.begin('ana', 'k1', 'fp-b', t0 + 5)).toEqual({ kind: 'reused' });
    await keys.finish('ana', 'k1', response);
    expect(await keys.begin('ana', 'k1', 'fp-a', t0 + 10)).toEqual({ kind: 'replay', response });
    expect(await keys.begin('ana', 'k1', 'fp-b', t0 + 10)).toEqual({ kind: 'reused' });
    // another caller's key of the same name is theirs
    expect(await keys.begin('bo', 'k1', 'fp-b', t0 + 10)).toEqual({ kind: 'claimed' });
  });

  it('of many requests claiming one key at once, exactly one gets it', async () => {
    const claims = await Promise.all(Array.from({ length: 20 }, () => store.idempotency.begin('ana', 'k-race', 'fp-a', t0)));
    expect(claims.filter((c) => c.kind === 'claimed')).toHaveLength(1);
    expect(claims.filter((c) => c.kind === 'in_progress')).toHaveLength(19);
  });

  it('a released claim (the request failed) can be claimed again, with any request', async () => {
    const keys = store.idempotency;
    await keys.begin('ana', 'k2', 'fp-a', t0);
    await keys.release('ana', 'k2');
    expect(await keys.begin('ana', 'k2', 'fp-b', t0 + 1)).toEqual({ kind: 'claimed' });
    // release never forgets a finished response
    await keys.finish('ana', 'k2', response);
    await keys.release('ana', 'k2');
    expect((await keys.begin('ana', 'k2', 'fp-b', t0 + 2)).kind).toBe('replay');
  });

  it('forgets keys after 24 hours', async () => {
    const keys = store.idempotency;
    await keys.begin('ana', 'k3', 'fp-a', t0);
    await keys.finish('ana', 'k3', response);
    expect((await keys.begin('ana', 'k3', 'fp-b', t0 + IDEMPOTENCY_KEY_TTL_MS - 1)).kind).toBe('reused');
    // past 24 hours the old row no longer counts, even before it is swept
    expect(await keys.begin('ana', 'k3', 'fp-b', t0 + IDEMPOTENCY_KEY_TTL_MS)).toEqual({ kind: 'claimed' });
    await keys.finish('ana', 'k3', response);
    await keys.begin('ana', 'k4', 'fp-a', t0);
    expect(await keys.expire(t0 + IDEMPOTENCY_KEY_TTL_MS + 1)).toBe(1); // k4; k3 was claimed again at t0 + 24 h
    expect(await keys.begin('ana', 'k4', 'fp-b', t0 + IDEMPOTENCY_KEY_TTL_MS + 2)).toEqual({ kind: 'claimed' });
  });

  it('keeps neither the key nor the response in the clear: a copy of the database reveals no token', async () => {
    const keys = store.idempotency;
    const secret = { status: 201, headers: {}, body: { data: { agent_token: 'tdev_SECRET-shown-once' } } };
    await keys.begin('ana', 'my-retry-key', 'fp', t0);
    await keys.finish('ana', 'my-retry-key', secret);
    const rows = await store.db.selectFrom('idempotency_keys').selectAll().execute();
    const dump = rows.flatMap((r) => Object.values(r).map((v) => (Buffer.isBuffer(v) ? v.toString('latin1') : String(v)))).join('|');
    expect(dump).toContain('ana'); // the dump is the row
    expect(dump).not.toContain('my-retry-key');
    expect(dump).not.toContain('SECRET');
    expect(await keys.begin('ana', 'my-retry-key', 'fp', t0 + 1)).toEqual({ kind: 'replay', response: secret });
    // tampering with the sealed response is caught, never replayed
    await store.db
      .updateTable('idempotency_keys')
      .set({ response: Buffer.alloc(64) })
      .execute();
    await expect(keys.begin('ana', 'my-retry-key', 'fp', t0 + 2)).rejects.toThrow();
  });

  it('claims a stopped run never finished are dropped at start-up; finished ones and later claims stay', async () => {
    const keys = store.idempotency;
    await keys.begin('ana', 'done', 'fp', t0);
    await keys.finish('ana', 'done', response);
    await keys.begin('ana', 'running', 'fp', t0);
    // a peer's request, claimed since: still running
    await keys.begin('bo', 'running', 'fp', t0 + 100);
    expect(await keys.abandonUnfinished(t0 + 100)).toBe(1);
    expect(await keys.begin('ana', 'running', 'fp', t0 + 101)).toEqual({ kind: 'claimed' });
    expect((await keys.begin('ana', 'done', 'fp', t0 + 101)).kind).toBe('replay');
    expect(await keys.begin('bo', 'running', 'fp', t0 + 101)).toEqual({ kind: 'in_progress' });
  });
});
