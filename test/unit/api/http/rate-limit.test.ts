/**
 * The sliding-window limiters, in memory and in the database (on the store under test): the limit
 * per window per key, the wait it names, and `peek` counting nothing. Both must answer alike.
 */
import { describe, expect, it } from 'vitest';
import { createDatabaseLimiter, createRateLimiter, createSlidingWindowLimiter, type RateLimiter } from '../../../../api/http/rate-limit';
import { onPostgres, storeForEachTest } from '../../../helpers/store';

describe.each(['in memory', 'in the database'] as const)('sliding-window rate limiter (%s)', (kind) => {
  const store = kind === 'in the database' ? storeForEachTest() : undefined;
  const limiterOf = (limit: number, windowMs: number, now: () => number): RateLimiter =>
    store ? createDatabaseLimiter(store.rateLimits, 'test', limit, windowMs, now) : createSlidingWindowLimiter(limit, windowMs, now);

  it('allows the limit per window and says how long to wait', async () => {
    let t = 0;
    const limiter = limiterOf(3, 60_000, () => t);
    expect([await limiter.take('ann'), await limiter.take('ann'), await limiter.take('ann')]).toEqual([0, 0, 0]);
    t = 10_500;
    expect(await limiter.take('ann')).toBe(50); // the first hit leaves the window at 60 s
    expect(await limiter.take('bob')).toBe(0); // per user
    t = 60_000; // the three hits at 0 s are gone; the refused one at 10.5 s never counted
    expect([await limiter.take('ann'), await limiter.take('ann'), await limiter.take('ann')]).toEqual([0, 0, 0]);
    expect(await limiter.take('ann')).toBe(60);
  });

  it('slides: old hits leave the window one by one', async () => {
    let t = 0;
    const limiter = limiterOf(2, 1000, () => t);
    await limiter.take('u');
    t = 400;
    await limiter.take('u');
    t = 999;
    expect(await limiter.take('u')).toBe(1);
    t = 1000;
    expect(await limiter.take('u')).toBe(0);
    expect(await limiter.take('u')).toBe(1);
  });

  it('peek says the wait without counting a hit', async () => {
    let t = 0;
    const limiter = limiterOf(1, 60_000, () => t);
    expect(await limiter.peek('ann')).toBe(0);
    expect(await limiter.peek('ann')).toBe(0);
    expect(await limiter.take('ann')).toBe(0); // the peeks above did not use up the one allowed hit
    t = 30_000;
    expect(await limiter.peek('ann')).toBe(30);
    expect(await limiter.peek('ann')).toBe(30);
    t = 60_000;
    expect(await limiter.peek('ann')).toBe(0);
  });

  it('counts concurrent takes in full: of many at once, exactly the limit pass', async () => {
    const limiter = limiterOf(4, 60_000, () => 5_000);
    const waits = await Promise.all(Array.from({ length: 12 }, () => limiter.take('ann')));
    expect(waits.filter((w) => w === 0)).toHaveLength(4);
    expect(waits.filter((w) => w === 60)).toHaveLength(8);
  });
});

describe('database limiter', () => {
  const store = storeForEachTest();

  it('keeps each group in its own buckets', async () => {
    const opens = createDatabaseLimiter(store.rateLimits, 'open', 1, 60_000, () => 0);
    const lists = createDatabaseLimiter(store.rateLimits, 'list', 1, 60_000, () => 0);
    expect(await opens.take('ann')).toBe(0);
    expect(await lists.take('ann')).toBe(0); // another group: another bucket
    expect(await opens.take('ann')).toBe(60);
    expect(await store.db.selectFrom('rate_limit_hits').select('bucket').orderBy('bucket').execute()).toEqual([{ bucket: 'list:ann' }, { bucket: 'open:ann' }]);
  });

  it('is what the API uses on PostgreSQL (peers share the counts); on SQLite the API counts in memory', async () => {
    const limiter = createRateLimiter(store, 'open', 1, 60_000, () => 0);
    expect(await limiter.take('ann')).toBe(0);
    expect(await limiter.take('ann')).toBe(60);
    const rows = await store.db.selectFrom('rate_limit_hits').select('bucket').execute();
    expect(rows).toEqual(onPostgres ? [{ bucket: 'open:ann' }] : []);
  });
});
