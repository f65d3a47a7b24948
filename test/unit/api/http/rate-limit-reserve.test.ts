/** The limiter's reservations: counted at once (so concurrent attempts cannot all pass), given back on release. */
import { describe, expect, it } from 'vitest';
import { createSlidingWindowLimiter } from '../../../../api/http/rate-limit';

describe('sliding-window limiter reservations', () => {
  it('counts a reservation at once: the limit holds while none is settled', () => {
    let t = 0;
    const limiter = createSlidingWindowLimiter(3, 60_000, () => t);
    const held = [limiter.reserve('ann'), limiter.reserve('ann'), limiter.reserve('ann')];
    expect(held.map((r) => r.wait)).toEqual([0, 0, 0]);
    t = 1_000;
    expect(limiter.reserve('ann').wait).toBe(59);
    expect(limiter.peek('ann')).toBe(59);
    expect(limiter.reserve('bob').wait).toBe(0); // per key
  });

  it('release gives the hit back, once; a refused reservation has nothing to give back', () => {
    let t = 0;
    const limiter = createSlidingWindowLimiter(2, 60_000, () => t);
    const first = limiter.reserve('ann');
    t = 10;
    limiter.reserve('ann');
    const refused = limiter.reserve('ann');
    expect(refused.wait).toBe(60);
    refused.release();
    expect(limiter.peek('ann')).toBe(60);
    first.release();
    first.release(); // twice is once
    expect(limiter.peek('ann')).toBe(0);
    expect(limiter.take('ann')).toBe(0);
    expect(limiter.take('ann')).toBe(60); // the hit at 10 ms stays; the one at 0 was given back
  });

  it('a reservation that aged out is released without touching newer hits', () => {
    let t = 0;
    const limiter = createSlidingWindowLimiter(2, 1_000, () => t);
    const old = limiter.reserve('ann');
    t = 1_500;
    limiter.reserve('ann');
    limiter.reserve('ann');
    old.release();
    expect(limiter.peek('ann')).toBe(1);
  });
});
