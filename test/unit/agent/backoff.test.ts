import { describe, expect, it } from 'vitest';
import { createBackoff } from '../../../agent/backoff';

describe('backoff with full jitter', () => {
  it('doubles the ceiling per attempt from 1 s up to 30 s', () => {
    const b = createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000, random: () => 0.999999 });
    const delays = Array.from({ length: 8 }, () => b.next());
    expect(delays).toEqual([1000, 2000, 4000, 8000, 16_000, 30_000, 30_000, 30_000]);
  });

  it('draws each delay uniformly below the ceiling', () => {
    const b = createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000, random: () => 0.25 });
    expect([b.next(), b.next(), b.next()]).toEqual([250, 500, 1000]);
    const spread = createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000 });
    for (let i = 0; i < 6; i++) spread.next();
    const samples = Array.from({ length: 2000 }, () => {
      const s = createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000 });
      for (let i = 0; i < 6; i++) s.next();
      return s.next();
    });
    expect(Math.min(...samples)).toBeLessThan(3000);
    expect(Math.max(...samples)).toBeGreaterThan(27_000);
    expect(Math.max(...samples)).toBeLessThanOrEqual(30_000);
  });

  it('resets only after a connection lived long enough', () => {
    const b = createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000, random: () => 0.999999 });
    b.next();
    b.next();
    b.next();
    b.connectionEnded(500); // accepted and dropped at once: no reset
    expect(b.next()).toBe(8000);
    b.connectionEnded(10_000);
    expect(b.attempts).toBe(0);
    expect(b.next()).toBe(1000);
  });
});
