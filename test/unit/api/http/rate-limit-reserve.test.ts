/**
 * The limiters' reservations, in memory and in the database (on the store under test): counted at
 * once (so concurrent attempts cannot all pass), given back on release.
 */
import { describe, expect, it } from 'vitest';
import { createDatabaseLimiter, createSlidingWindowLimiter, type RateLimiter } from '../../../../api/http/rate-limit';
import { storeForEachTest } from '../../../helpers/store';

describe.each(['in memory', 'in the database'] as const)('sliding-window limiter reservations (%s)', (kind) => {
  const store = kind === 'in the database' ? storeForEachTest() : undefined;
  const limiterOf = (limit: number, windowMs: number, now: () => number): RateLimiter =>
    store ? createDatabaseLimiter(store.rateLimits, 'test', limit, windowMs, now) : createSlidingWindowLimiter(limit, windowMs, now);

  it('counts a reservation at once: the limit holds while none is settled', async () => {
    let t = 0;
    const limiter = limiterOf(3, 60_000, () => t);
    const held = await Promise.all([limiter.reserve('ann'), limiter.reserve('ann'), limiter.reserve('ann'), limiter.reserve('ann')]);
    expect(held.map((r) => r.wait).sort()).toEqual([0, 0, 0, 60]);
    t = 1_000;
    expect((await limiter.reserve('ann')).wait).toBe(59);
    expect(await limiter.peek('ann')).toBe(59);
    expect((await limiter.reserve('bob')).wait).toBe(0); // per key
  });

  it('release gives the hit back, once; a refused reservation has nothing to give back', async () => {
    let t = 0;
    const limiter = limiterOf(2, 60_000, () => t);
    const first = await limiter.reserve('ann');
    t = 10;
    await limiter.reserve('ann');
    const refused = await limiter.reserve('ann');
    expect(refused.wait).toBe(60);
    await refused.release();
    expect(await limiter.peek('ann')).toBe(60);
    await first.release();
    await first.release(); // twice is once
    expect(await limiter.peek('ann')).toBe(0);
    expect(await limiter.take('ann')).toBe(0);
    expect(await limiter.take('ann')).toBe(60); // the hit at 10 ms stays; the one at 0 was given back
  });

  it('a reservation that aged out is released without touching newer hits', async () => {
    let t = 0;
    const limiter = limiterOf(2, 1_000, () => t);
    const old = await limiter.reserve('ann');
    t = 1_500;
    await limiter.reserve('ann');
    await limiter.reserve('ann');
    await old.release();
    expect(await limiter.peek('ann')).toBe(1);
  });
});

describe('database limiter reservations', () => {
  const store = storeForEachTest();

  it('a release the database cannot carry out does not reject: the hit stays until it leaves the window', async () => {
    const limiter = createDatabaseLimiter(store.rateLimits, 'test', 1, 60_000, () => 0);
    const held = await limiter.reserve('ann');
    const broken = { ...store.rateLimits, release: () => Promise.reject(new Error('the database did not answer')) };
    const failing = createDatabaseLimiter(broken, 'test', 2, 60_000, () => 0);
    const second = await failing.reserve('ann');
    await expect(second.release()).resolves.toBeUndefined();
    await held.release();
    expect(await limiter.peek('ann')).toBe(60);
  });
});
