/**
 * Rate-limit hits in the database (SQLite, or PostgreSQL in the `postgres` run): the sliding window
 * per bucket, the wait it names, reservations given back, the sweep, and the limit holding for
 * several stores (peers) counting one bucket at once.
 */
import { describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../../api/store/index';
import { freshStoreLocation, storeForEachTest } from '../../../helpers/store';

const minute = 60_000;

describe('rate-limit hits', () => {
  const store = storeForEachTest();
  const rows = async (bucket?: string) =>
    (
      await store.db
        .selectFrom('rate_limit_hits')
        .select(['bucket', 'at'])
        .$if(bucket !== undefined, (q) => q.where('bucket', '=', bucket!))
        .execute()
    ).length;

  it('counts up to the limit per bucket, then names the wait until the oldest hit leaves the window', async () => {
    const hits = store.rateLimits;
    expect([await hits.take('a', 3, minute, 0), await hits.take('a', 3, minute, 0), await hits.take('a', 3, minute, 1_000)]).toEqual([0, 0, 0]);
    expect(await hits.take('a', 3, minute, 10_500)).toBe(50);
    expect(await hits.take('b', 3, minute, 10_500)).toBe(0); // another bucket
    expect(await rows('a')).toBe(3); // the refused take counted nothing
    expect(await hits.take('a', 3, minute, 60_000)).toBe(0); // the two hits at 0 left the window
    expect(await hits.take('a', 3, minute, 60_000)).toBe(0);
    expect(await hits.take('a', 3, minute, 60_000)).toBe(1); // the hit at 1 s leaves at 61 s
    expect(await rows('a')).toBe(3); // the bucket's hits out of the window were deleted
  });

  it('peek names the wait and counts nothing', async () => {
    const hits = store.rateLimits;
    expect(await hits.peek('a', 1, minute, 0)).toBe(0);
    expect(await hits.take('a', 1, minute, 0)).toBe(0);
    expect(await hits.peek('a', 1, minute, 30_000)).toBe(30);
    expect(await hits.peek('a', 1, minute, 60_000)).toBe(0);
    expect(await rows()).toBe(1);
  });

  it('reserve counts at once and names the hit; release gives it back; a refusal has no hit', async () => {
    const hits = store.rateLimits;
    const first = await hits.reserve('a', 2, minute, 0);
    const second = await hits.reserve('a', 2, minute, 10);
    expect(first.wait).toBe(0);
    expect(second.wait).toBe(0);
    expect(first.id).not.toBe(second.id);
    expect(await hits.reserve('a', 2, minute, 20)).toEqual({ wait: 60, id: undefined });
    await hits.release(first.id!);
    await hits.release(first.id!); // gone already: nothing
    expect(await hits.take('a', 2, minute, 30)).toBe(0);
    expect(await hits.take('a', 2, minute, 40)).toBe(60); // the hit at 10 ms is the oldest now
  });

  it('expire removes the old hits of every bucket', async () => {
    const hits = store.rateLimits;
    await hits.take('a', 5, minute, 0);
    await hits.take('b', 5, minute, 1_000);
    await hits.take('c', 5, minute, 90_000);
    expect(await hits.expire(1_000)).toBe(2);
    expect(await rows()).toBe(1);
    expect(await hits.expire(1_000)).toBe(0);
  });

  it('counts inside a transaction, and a rollback uncounts', async () => {
    await expect(
      store.transaction(async (tx) => {
        expect(await tx.rateLimits.take('a', 1, minute, 0)).toBe(0);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await store.rateLimits.take('a', 1, minute, 0)).toBe(0);
    expect(await store.rateLimits.take('a', 1, minute, 0)).toBe(60);
  });

  it('of many takes at once on one store, exactly the limit count', async () => {
    const waits = await Promise.all(Array.from({ length: 20 }, () => store.rateLimits.take('race', 5, minute, 1_000)));
    expect(waits.filter((w) => w === 0)).toHaveLength(5);
    expect(waits.filter((w) => w === 60)).toHaveLength(15);
    expect(await rows('race')).toBe(5);
  });
});

describe('rate-limit hits across peers', () => {
  it('three stores on one database taking one bucket at once count exactly the limit', async () => {
    const limit = 8;
    const location = await freshStoreLocation();
    const peers: Store[] = [];
    try {
      for (let i = 0; i < 3; i++) peers.push(await openStore(location));
      const t = Date.parse('2026-11-24T12:00:00Z');
      const waits = await Promise.all(
        peers.flatMap((peer) => Array.from({ length: limit * 2 }, (_, i) => peer.rateLimits.take('shared', limit, minute, t + i))),
      );
      expect(waits.filter((w) => w === 0)).toHaveLength(limit);
      expect(waits.every((w) => w === 0 || (w >= 59 && w <= 60))).toBe(true);
      const counted = await peers[0]!.db.selectFrom('rate_limit_hits').select('id').where('bucket', '=', 'shared').execute();
      expect(counted).toHaveLength(limit);
    } finally {
      for (const peer of peers) await peer.close();
    }
  });
});
