/** When the agent dials again: the backoff for failures that pass, the long wait once its token is refused three times in a row. */
import { describe, expect, it } from 'vitest';
import { createReconnectPolicy, formatWait, REFUSED_RETRY_MS } from '../../../agent/reconnect';
import { createBackoff } from '../../../agent/backoff';

const policy = (random = () => 0.5) =>
  createReconnectPolicy({ backoff: createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000, random: () => 0.999999 }), random });

describe('reconnect policy', () => {
  it('waits the long interval from the third 401 in a row, saying so once', () => {
    const p = policy();
    const tries = Array.from({ length: 6 }, () => p.failed(401));
    expect(tries.map((t) => t.delayMs)).toEqual([1000, 2000, REFUSED_RETRY_MS, REFUSED_RETRY_MS, REFUSED_RETRY_MS, REFUSED_RETRY_MS]);
    expect(tries.map((t) => t.changed)).toEqual([false, false, true, false, false, false]);
    expect(tries.map((t) => t.mode)).toEqual(['backoff', 'backoff', 'token_refused', 'token_refused', 'token_refused', 'token_refused']);
    expect(REFUSED_RETRY_MS).toBe(5 * 60_000);
  });

  it('jitters the long wait by ±20 %', () => {
    const low = policy(() => 0);
    const high = policy(() => 0.999999);
    for (const p of [low, high]) for (let i = 0; i < 2; i++) p.failed(401);
    expect(low.failed(401).delayMs).toBe(0.8 * REFUSED_RETRY_MS);
    const highest = high.failed(401).delayMs;
    expect(highest).toBeGreaterThan(1.19 * REFUSED_RETRY_MS);
    expect(highest).toBeLessThanOrEqual(1.2 * REFUSED_RETRY_MS);
  });

  it('counts only refusals in a row: a server that is down or failing between them starts the count again', () => {
    const p = policy();
    p.failed(401);
    p.failed(401);
    expect(p.failed(503)).toMatchObject({ mode: 'backoff', delayMs: 4000 });
    expect(p.failed(undefined)).toMatchObject({ mode: 'backoff', refusals: 0 });
    p.failed(401);
    expect(p.failed(401)).toMatchObject({ mode: 'backoff', refusals: 2 });
    expect(p.failed(401)).toMatchObject({ mode: 'token_refused', changed: true });
  });

  it('keeps the long wait while the server is unreachable; only an accepted connection ends it', () => {
    const p = policy();
    for (let i = 0; i < 3; i++) p.failed(401);
    expect(p.failed(undefined)).toMatchObject({ mode: 'token_refused', changed: false, delayMs: REFUSED_RETRY_MS });
    expect(p.failed(502)).toMatchObject({ mode: 'token_refused', delayMs: REFUSED_RETRY_MS });
    expect(p.connected()).toBe(true);
    expect(p.mode).toBe('backoff');
    expect(p.connected()).toBe(false); // said once
    expect(p.failed(401)).toMatchObject({ mode: 'backoff', refusals: 1, changed: false });
  });

  it('takes another long interval (tests shorten it)', () => {
    const p = createReconnectPolicy({ backoff: createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000 }), longMs: 200, random: () => 0.5 });
    for (let i = 0; i < 2; i++) p.failed(401);
    expect(p.failed(401).delayMs).toBe(200);
  });
});

describe('formatWait', () => {
  it('reads in minutes when whole, else in seconds', () => {
    expect(formatWait(300_000)).toBe('5 min');
    expect(formatWait(90_000)).toBe('90 s');
    expect(formatWait(200)).toBe('0.2 s');
  });
});
