/** The idempotency key store: claims, replays, other requests, expiry after 24 hours, and claims a stopped run left. */
import { describe, expect, it } from 'vitest';
import { IDEMPOTENCY_KEY_TTL_MS } from '../../../../api/store/idempotency';
import { storeForEachTest } from '../../../helpers/store';

describe('idempotency keys', () => {
  const store = storeForEachTest();
  const t0 = Date.parse('2026-11-24T12:00:00Z');
  const response = { status: 201, headers: { etag: '"x"' }, body: { status: 201, data: { id: 1 } } };

  it('claims a key once; the same request waits, then replays; another request is refused', () => {
    const keys = store.idempotency;
    expect(keys.begin('ana', 'k1', 'fp-a', t0)).toEqual({ kind: 'claimed' });
    expect(keys.begin('ana', 'k1', 'fp-a', t0 + 5)).toEqual({ kind: 'in_progress' });
    expect(keys.begin('ana', 'k1', 'fp-b', t0 + 5)).toEqual({ kind: 'reused' });
    keys.finish('ana', 'k1', response);
    expect(keys.begin('ana', 'k1', 'fp-a', t0 + 10)).toEqual({ kind: 'replay', response });
    expect(keys.begin('ana', 'k1', 'fp-b', t0 + 10)).toEqual({ kind: 'reused' });
    // another caller's key of the same name is theirs
    expect(keys.begin('bo', 'k1', 'fp-b', t0 + 10)).toEqual({ kind: 'claimed' });
  });

  it('a released claim (the request failed) can be claimed again, with any request', () => {
    const keys = store.idempotency;
    keys.begin('ana', 'k2', 'fp-a', t0);
    keys.release('ana', 'k2');
    expect(keys.begin('ana', 'k2', 'fp-b', t0 + 1)).toEqual({ kind: 'claimed' });
    // release never forgets a finished response
    keys.finish('ana', 'k2', response);
    keys.release('ana', 'k2');
    expect(keys.begin('ana', 'k2', 'fp-b', t0 + 2).kind).toBe('replay');
  });

  it('forgets keys after 24 hours', () => {
    const keys = store.idempotency;
    keys.begin('ana', 'k3', 'fp-a', t0);
    keys.finish('ana', 'k3', response);
    expect(keys.begin('ana', 'k3', 'fp-b', t0 + IDEMPOTENCY_KEY_TTL_MS - 1).kind).toBe('reused');
    // past 24 hours the old row no longer counts, even before it is swept
    expect(keys.begin('ana', 'k3', 'fp-b', t0 + IDEMPOTENCY_KEY_TTL_MS)).toEqual({ kind: 'claimed' });
    keys.finish('ana', 'k3', response);
    keys.begin('ana', 'k4', 'fp-a', t0);
    expect(keys.expire(t0 + IDEMPOTENCY_KEY_TTL_MS + 1)).toBe(1); // k4; k3 was claimed again at t0 + 24 h
    expect(keys.begin('ana', 'k4', 'fp-b', t0 + IDEMPOTENCY_KEY_TTL_MS + 2)).toEqual({ kind: 'claimed' });
  });

  it('keeps neither the key nor the response in the clear: a copy of the database reveals no token', () => {
    const keys = store.idempotency;
    const secret = { status: 201, headers: {}, body: { data: { agent_token: 'tdev_SECRET-shown-once' } } };
    keys.begin('ana', 'my-retry-key', 'fp', t0);
    keys.finish('ana', 'my-retry-key', secret);
    const rows = store.db.prepare('SELECT * FROM idempotency_keys').all() as Array<Record<string, unknown>>;
    const dump = rows.flatMap((r) => Object.values(r).map((v) => (Buffer.isBuffer(v) ? v.toString('latin1') : String(v)))).join('|');
    expect(dump).toContain('ana'); // the dump is the row
    expect(dump).not.toContain('my-retry-key');
    expect(dump).not.toContain('SECRET');
    expect(keys.begin('ana', 'my-retry-key', 'fp', t0 + 1)).toEqual({ kind: 'replay', response: secret });
    // tampering with the sealed response is caught, never replayed
    store.db.prepare('UPDATE idempotency_keys SET response = zeroblob(64)').run();
    expect(() => keys.begin('ana', 'my-retry-key', 'fp', t0 + 2)).toThrow();
  });

  it('claims a stopped run never finished are dropped at start-up; finished ones stay', () => {
    const keys = store.idempotency;
    keys.begin('ana', 'done', 'fp', t0);
    keys.finish('ana', 'done', response);
    keys.begin('ana', 'running', 'fp', t0);
    expect(keys.abandonUnfinished()).toBe(1);
    expect(keys.begin('ana', 'running', 'fp', t0 + 1)).toEqual({ kind: 'claimed' });
    expect(keys.begin('ana', 'done', 'fp', t0 + 1).kind).toBe('replay');
  });
});
