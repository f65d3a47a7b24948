/** The sliding-window limiter: the limit per window per key, the wait it names, and `peek` counting nothing. */
import { describe, expect, it } from 'vitest';
import { createSlidingWindowLimiter } from '../../../../api/http/rate-limit';

describe('sliding-window rate limiter', () => {
  it('allows the limit per window and says how long to wait', () => {
    let t = 0;
    const limiter = createSlidingWindowLimiter(3, 60_000, () => t);
    expect([limiter.take('ann'), limiter.take('ann'), limiter.take('ann')]).toEqual([0, 0, 0]);
    t = 10_500;
    expect(limiter.take('ann')).toBe(50); // the first hit leaves the window at 60 s
    expect(limiter.take('bob')).toBe(0); // per user
    t = 60_000; // the three hits at 0 s are gone; the refused one at 10.5 s never counted
    expect([limiter.take('ann'), limiter.take('ann'), limiter.take('ann')]).toEqual([0, 0, 0]);
    expect(limiter.take('ann')).toBe(60);
  });

  it('slides: old hits leave the window one by one', () => {
    let t = 0;
    const limiter = createSlidingWindowLimiter(2, 1000, () => t);
    limiter.take('u');
    t = 400;
    limiter.take('u');
    t = 999;
    expect(limiter.take('u')).toBe(1);
    t = 1000;
    expect(limiter.take('u')).toBe(0);
    expect(limiter.take('u')).toBe(1);
  });

  it('peek says the wait without counting a hit', () => {
    let t = 0;
    const limiter = createSlidingWindowLimiter(1, 60_000, () => t);
    expect(limiter.peek('ann')).toBe(0);
    expect(limiter.peek('ann')).toBe(0);
    expect(limiter.take('ann')).toBe(0); // the peeks above did not use up the one allowed hit
    t = 30_000;
    expect(limiter.peek('ann')).toBe(30);
    expect(limiter.peek('ann')).toBe(30);
    t = 60_000;
    expect(limiter.peek('ann')).toBe(0);
  });
});
