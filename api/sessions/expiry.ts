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
  nextDue(): Promise<string | null>;
  /** Ends every session whose moment has come. */
  expireDue(): Promise<unknown>;
}

export function createExpiryTimer({ log, now, nextDue, expireDue }: ExpiryTimerDeps) {
  let timer: NodeJS.Timeout | undefined;
  let sweeper: NodeJS.Timeout | undefined;
  let armedFor: number | undefined;
  let stopped = true;
  /** The run in progress: runs never overlap, and a run asked for during one follows it. */
  let running: Promise<void> | undefined;
  let again = false;

  /** Sets the timer for `at` (ms), replacing the one set. */
  function setFor(at: number | undefined): void {
    clearTimeout(timer);
    timer = undefined;
    armedFor = at;
    if (stopped || at === undefined) return;
    timer = setTimeout(onTimer, Math.min(Math.max(0, at - now()), MAX_TIMER_MS));
  }

  async function arm(): Promise<void> {
    const next = await nextDue();
    setFor(next === null ? undefined : Date.parse(next));
  }

  function onTimer(): void {
    timer = undefined;
    run();
  }

  function run(): void {
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      do {
        again = false;
        try {
          await expireDue();
          await arm();
        } catch (err) {
          log.error('session expiry failed; retrying', { err });
          setFor(now() + RETRY_AFTER_ERROR_MS);
        }
      } while (again && !stopped);
    })().finally(() => (running = undefined));
  }

  return {
    /** Arms the timer and the safety sweep. */
    start(): void {
      stopped = false;
      run();
      sweeper = setInterval(run, SAFETY_SWEEP_MS);
      sweeper.unref();
    },

    /** A session was opened that must be looked at by `endsAt` (ms): re-arm if that is sooner. */
    opened(endsAt: number): void {
      if (!stopped && (armedFor === undefined || endsAt < armedFor)) setFor(endsAt);
    },

    /** Resolves once no run is in progress (one asked for during a run included). */
    async settled(): Promise<void> {
      while (running) await running;
    },

    /** Which of its timers are set: the precise one (for the next moment due) and the safety sweep. */
    armed: (): { timer: boolean; sweep: boolean } => ({ timer: timer !== undefined, sweep: !stopped }),

    /** Disarms both timers; resolves once a run in progress has ended. */
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(sweeper);
      sweeper = undefined;
      setFor(undefined);
      await running;
    },
  };
}
