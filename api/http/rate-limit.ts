/**
 * @module Per-user rate limits in a sliding one-minute window (docs/http-api.md: the limits are on the endpoints they apply to). Every request of
 * the group counts whatever its outcome, except the ones refused with 429, so that a client that
 * waits the `Retry-After` it was given is served.
 */
import type { Middleware } from 'koa';
import { ApiError } from '../errors';
import { principalOf } from './auth';

export interface RateLimiter {
  /** Counts one request of `key`; returns 0 if allowed, else the seconds to wait. */
  take(key: string): number;
  /** The seconds `key` must wait now (0 if none), counting nothing. */
  peek(key: string): number;
  /**
   * Counts one request of `key` at once, like `take`, but it can be given back: for a limit on
   * outcomes that are known only later (a failed password check), counted before the work so
   * that concurrent requests cannot all start while none has counted yet.
   */
  reserve(key: string): Reservation;
}

/** One counted request, or a refusal: `wait` > 0 counted nothing (and `release` does nothing). */
export interface Reservation {
  wait: number;
  /** Uncounts the request (once; later calls do nothing). */
  release(): void;
}

const NOTHING_TO_RELEASE = () => {};

export function createSlidingWindowLimiter(limit: number, windowMs: number, now: () => number): RateLimiter {
  const hits = new Map<string, number[]>();
  let takes = 0;

  function sweep(t: number): void {
    for (const [key, times] of hits) if (times.at(-1)! <= t - windowMs) hits.delete(key);
  }

  /** The seconds `times` (old hits dropped from it) impose at `t`. */
  function waitOf(times: number[], t: number): number {
    while (times.length > 0 && times[0]! <= t - windowMs) times.shift();
    return times.length >= limit ? Math.max(1, Math.ceil((times[0]! + windowMs - t) / 1000)) : 0;
  }

  /** Counts a hit of `key` at `t` unless the window is full; returns the wait (0: counted). */
  function take(key: string, t: number): number {
    if (++takes % 4096 === 0) sweep(t);
    let times = hits.get(key);
    if (!times) hits.set(key, (times = []));
    const wait = waitOf(times, t);
    if (wait === 0) times.push(t);
    return wait;
  }

  return {
    take: (key) => take(key, now()),
    peek(key) {
      const times = hits.get(key);
      return times ? waitOf(times, now()) : 0;
    },
    reserve(key) {
      const t = now();
      const wait = take(key, t);
      if (wait > 0) return { wait, release: NOTHING_TO_RELEASE };
      let released = false;
      return {
        wait,
        release() {
          if (released) return;
          released = true;
          // Hits at the same millisecond are interchangeable; one that aged out is gone already.
          const times = hits.get(key);
          const i = times ? times.lastIndexOf(t) : -1;
          if (i >= 0) times!.splice(i, 1);
        },
      };
    },
  };
}

/** Limits a route group per authenticated user (never per token or header, which are cheap to vary). */
export function rateLimit(limiter: RateLimiter, perMinute: number): Middleware {
  return async function rateLimitMiddleware(ctx, next) {
    const wait = limiter.take(principalOf(ctx).username);
    if (wait > 0) {
      throw new ApiError('rate_limited', `rate limit of ${perMinute} requests per minute exceeded; retry in ${wait} s`, undefined, {
        'Retry-After': String(wait),
      });
    }
    await next();
  };
}
