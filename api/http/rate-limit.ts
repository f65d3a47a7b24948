/**
 * @module Per-user rate limits in a sliding one-minute window (docs/http-api.md: the limits are on the endpoints they apply to). Every request of
 * the group counts whatever its outcome, except the ones refused with 429, so that a client that
 * waits the `Retry-After` it was given is served.
 *
 * Two counters behave alike: in the process's memory on SQLite (one process serves the database,
 * so a row per request would buy nothing), and in the database on PostgreSQL
 * (`store.rateLimits`), so that a limit holds across the peers sharing it (CONTRACT 10.1).
 */
import type { Middleware } from 'koa';
import { ApiError } from '../errors';
import type { Store } from '../store/index';
import type { RateLimitRepo } from '../store/rate-limits';
import { principalOf } from './auth';

export interface RateLimiter {
  /** Counts one request of `key`; resolves to 0 if allowed, else the seconds to wait. */
  take(key: string): Promise<number>;
  /** The seconds `key` must wait now (0 if none), counting nothing. */
  peek(key: string): Promise<number>;
  /**
   * Counts one request of `key` at once, like `take`, but it can be given back: for a limit on
   * outcomes that are known only later (a failed password check), counted before the work so
   * that concurrent requests cannot all start while none has counted yet.
   */
  reserve(key: string): Promise<Reservation>;
}

/** One counted request, or a refusal: `wait` > 0 counted nothing (and `release` does nothing). */
export interface Reservation {
  wait: number;
  /**
   * Uncounts the request (once; later calls do nothing). Never rejects: a hit the database could
   * not take back stays counted until it leaves the window.
   */
  release(): Promise<void>;
}

/** The window of every limit the API sets: hits older than this count for none. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

const NOTHING_TO_RELEASE = async () => {};

/** Gives back a reservation once: later calls of the result do nothing. */
function once(giveBack: () => Promise<void>): () => Promise<void> {
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    await giveBack();
  };
}

/** The limiter for one group of endpoints: in memory on SQLite, in the database on PostgreSQL (shared by peers). */
export function createRateLimiter(
  store: Pick<Store, 'dialect' | 'rateLimits'>,
  group: string,
  limit: number,
  windowMs: number,
  now: () => number,
): RateLimiter {
  return store.dialect === 'postgres' ? createDatabaseLimiter(store.rateLimits, group, limit, windowMs, now) : createSlidingWindowLimiter(limit, windowMs, now);
}

/** Counts in the process's memory: exact for one process, blind to peers. */
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

  // Each method decides before it returns its promise: concurrent callers are counted in call order.
  return {
    take: async (key) => take(key, now()),
    async peek(key) {
      const times = hits.get(key);
      return times ? waitOf(times, now()) : 0;
    },
    async reserve(key) {
      const t = now();
      const wait = take(key, t);
      if (wait > 0) return { wait, release: NOTHING_TO_RELEASE };
      const release = once(async () => {
        // Hits at the same millisecond are interchangeable; one that aged out is gone already.
        const times = hits.get(key);
        const i = times ? times.lastIndexOf(t) : -1;
        if (i >= 0) times!.splice(i, 1);
      });
      return { wait, release };
    },
  };
}

/**
 * Counts in the database, in buckets `<group>:<key>`, so that every peer counts the same requests.
 * A take drops its own bucket's hits that left the window; the hits of buckets no longer taken are
 * the housekeeping's to sweep (`store.rateLimits.expire(now - RATE_LIMIT_WINDOW_MS)`).
 */
export function createDatabaseLimiter(repo: RateLimitRepo, group: string, limit: number, windowMs: number, now: () => number): RateLimiter {
  const bucketOf = (key: string) => `${group}:${key}`;
  return {
    take: (key) => repo.take(bucketOf(key), limit, windowMs, now()),
    peek: (key) => repo.peek(bucketOf(key), limit, windowMs, now()),
    async reserve(key) {
      const { wait, id } = await repo.reserve(bucketOf(key), limit, windowMs, now());
      if (id === undefined) return { wait, release: NOTHING_TO_RELEASE };
      return { wait, release: once(() => repo.release(id).catch(() => {})) };
    },
  };
}

/** Limits a route group per authenticated user (never per token or header, which are cheap to vary). */
export function rateLimit(limiter: RateLimiter, perMinute: number): Middleware {
  return async function rateLimitMiddleware(ctx, next) {
    const wait = await limiter.take(principalOf(ctx).username);
    if (wait > 0) {
      throw new ApiError('rate_limited', `rate limit of ${perMinute} requests per minute exceeded; retry in ${wait} s`, undefined, {
        'Retry-After': String(wait),
      });
    }
    await next();
  };
}
