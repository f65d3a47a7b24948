/**
 * @module Reconnect delays: exponential backoff with full jitter (AWS architecture blog,
 * "Exponential Backoff And Jitter"). The ceiling doubles per failed attempt from `baseMs` up to
 * `maxMs`, and each delay is uniform in [0, ceiling], so a fleet reconnecting after a server
 * restart spreads out instead of arriving in waves. The attempt count resets only once a
 * connection has stayed up for `stableMs`, so a server that accepts and drops at once cannot
 * cause a hot loop.
 */

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** A connection that lived at least this long resets the attempt count. */
  stableMs: number;
  /** Uniform random in [0, 1); injectable for tests. */
  random?: () => number;
}

export interface Backoff {
  /** The delay before the next attempt; counts the attempt. */
  next(): number;
  /** Tells the backoff a connection ended after living `livedMs`. */
  connectionEnded(livedMs: number): void;
  readonly attempts: number;
}

export function createBackoff(options: BackoffOptions): Backoff {
  const random = options.random ?? Math.random;
  let attempts = 0;
  return {
    next() {
      const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(attempts, 30));
      attempts++;
      return Math.round(random() * ceiling);
    },
    connectionEnded(livedMs) {
      if (livedMs >= options.stableMs) attempts = 0;
    },
    get attempts() {
      return attempts;
    },
  };
}
