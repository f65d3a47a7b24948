/**
 * The warning clock (`shared/relay/expiry-warnings.ts`): only the warnings still ahead, each once,
 * at its moment; a watch with a new end starts over; a late timer gives the latest warning passed;
 * one timer for every session, cleared when nothing is watched.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createWarningClock, expiringNotice, spokenDuration } from '../../../../shared/relay/expiry-warnings';

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(0);
});
afterEach(() => vi.useRealTimers());

function clock(offsetsS = [300, 60]) {
  const warned: Array<[string, number, number]> = [];
  const c = createWarningClock<string>({
    offsetsS,
    now: Date.now,
    warn: (key, _value, expiresAt, left) => warned.push([key, left, expiresAt]),
  });
  return { c, warned };
}

describe('the warning clock', () => {
  it('warns at 300 and 60 s before the end, each once; a 3-minute session only at 60 s', () => {
    const { c, warned } = clock();
    c.watch('long', 600_000, 'x');
    c.watch('short', 180_000, 'y');
    vi.advanceTimersByTime(119_999);
    expect(warned).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(warned).toEqual([['short', 60, 180_000]]);
    vi.advanceTimersByTime(180_000);
    expect(warned).toEqual([
      ['short', 60, 180_000],
      ['long', 300, 600_000],
    ]);
    vi.advanceTimersByTime(240_000);
    expect(warned.map(([k, left]) => `${k}:${left}`)).toEqual(['short:60', 'long:300', 'long:60']);
    expect(c.armed()).toBe(false); // nothing left to warn of
  });

  it('starts over from a new end (an extend), and forgets a closed session', () => {
    const { c, warned } = clock();
    c.watch('s', 400_000, 'x');
    vi.advanceTimersByTime(100_000); // the 300 s warning
    c.watch('s', 1_000_000, 'x'); // extended: both warnings are ahead again
    vi.advanceTimersByTime(600_000);
    expect(warned.map(([, left, end]) => [left, end])).toEqual([
      [300, 400_000],
      [300, 1_000_000],
    ]);
    c.forget('s');
    expect(c.armed()).toBe(false);
    vi.advanceTimersByTime(400_000);
    expect(warned).toHaveLength(2);
  });

  it('a late timer gives only the latest warning passed; a session already past every warning gets none', () => {
    const { c, warned } = clock();
    c.watch('s', 400_000, 'x');
    vi.setSystemTime(245_000); // the wall clock steps: when the timer fires, both moments have passed
    vi.advanceTimersByTime(100_000);
    expect(warned).toEqual([['s', 55, 400_000]]);
    vi.advanceTimersByTime(100_000);
    expect(warned).toHaveLength(1);
    c.watch('late', Date.now() + 30_000, 'y');
    expect(c.watching('late')).toBe(false);
  });

  it('says the time left in words', () => {
    expect([300, 60, 58, 1, 90].map(spokenDuration)).toEqual(['5 minutes', '1 minute', '58 seconds', '1 second', '90 seconds']);
    expect(expiringNotice('sess-a', '2026-11-26T20:15:00.000Z', 300).message).toBe(
      'tether: this session expires in 5 minutes (at 20:15:00 UTC); extend it with: tether session extend sess-a --ttl SECONDS',
    );
  });
});
