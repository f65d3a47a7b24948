/**
 * @module The session expiry timer: one timer armed for the earliest moment an open session
 * expires, loses its token or goes idle, re-armed as sessions come and go, plus a coarse safety sweep.
 * It decides only when to look; what expiring means is the caller's `expireDue`.
 */
import type { Logger } from '../../shared/log';

// setTimeout's ceiling; the longest TTL (8 h) is far below it.
const MAX_TIMER_MS = 2 ** 31 - 1;
const RETRY_AFTER_ERROR_MS = 1000;
/**
 * Timers run on the monotonic clock while expiry times are wall-clock; a coarse sweep catches
 * what a clock step (NTP, a resumed VM) would make the precise timer miss.
 */
const SAFETY_SWEEP_MS = 5000;

export interface ExpiryTimerDeps {
  log: Logger;
  now: () => number;
  /** The earliest moment (ISO) an open session must be looked at, or null when none is open. */
  nextDue(): string | null;
  /** Ends every session whose moment has come. */
  expireDue(): void;
}

export function createExpiryTimer({ log, now, nextDue, expireDue }: ExpiryTimerDeps) {
  let timer: NodeJS.Timeout | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  let armedFor: number | undefined;
  let stopped = true;

  function arm(): void {
    clearTimeout(timer);
    timer = undefined;
    armedFor = undefined;
    if (stopped) return;
    const next = nextDue();
    if (next === null) return;
    armedFor = Date.parse(next);
    timer = setTimeout(onTimer, Math.min(Math.max(0, armedFor - now()), MAX_TIMER_MS));
  }

  function onTimer(): void {
    timer = undefined;
    run();
  }

  function run(): void {
    try {
      expireDue();
      arm();
    } catch (err) {
      log.error('session expiry failed; retrying', { err });
      clearTimeout(timer);
      armedFor = undefined;
      if (!stopped) timer = setTimeout(onTimer, RETRY_AFTER_ERROR_MS);
    }
  }

  return {
    /** Arms the timer and the safety sweep. */
    start(): void {
      stopped = false;
      arm();
      sweeper = setInterval(run, SAFETY_SWEEP_MS);
      sweeper.unref();
    },

    /** A session was opened that must be looked at by `endsAt` (ms): re-arm if that is sooner. */
    opened(endsAt: number): void {
      if (!stopped && (armedFor === undefined || endsAt < armedFor)) arm();
    },

    /** Disarms both timers. */
    stop(): void {
      stopped = true;
      clearInterval(sweeper);
      arm();
    },
  };
}
