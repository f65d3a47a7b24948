/**
 * @module Warnings before a session's end (docs/session-streams.md, notices): at each offset of
 * TETHER_SESSION_WARNINGS (default 5 and 1 minute) before its `expires_at`, once, and only the
 * ones still ahead when the session is watched (a 3-minute session gets the 1-minute one). One
 * timer serves every watched session, armed for the earliest warning due; watching a session again
 * with a new expiry (an extend) starts over from it. The relay warns the clients of the streams it
 * holds with it (a notice frame), the API the event streams (`session.expiring`).
 */
import type { StreamNotice } from '../protocol/session-stream';

/** The default of TETHER_SESSION_WARNINGS: seconds before a session's end. */
export const DEFAULT_SESSION_WARNINGS_S: readonly number[] = [300, 60];

// setTimeout's ceiling; the longest session (8 h) is far below it.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** "5 minutes", "1 minute", "90 seconds". */
export function spokenDuration(seconds: number): string {
  if (seconds >= 60 && seconds % 60 === 0) return seconds === 60 ? '1 minute' : `${seconds / 60} minutes`;
  return seconds === 1 ? '1 second' : `${seconds} seconds`;
}

/** The notice frame a stream's client gets `secondsLeft` before the session's end. */
export function expiringNotice(sessionId: string, expiresAt: string, secondsLeft: number): StreamNotice {
  const at = new Date(expiresAt).toISOString().slice(11, 19);
  return {
    type: 'notice',
    code: 'session_expiring',
    expires_at: expiresAt,
    seconds_left: secondsLeft,
    message: `tether: this session expires in ${spokenDuration(secondsLeft)} (at ${at} UTC); extend it with: tether session extend ${sessionId} --ttl SECONDS`,
  };
}

export interface WarningClockDeps<T> {
  /** Seconds before the end at which to warn. */
  offsetsS: readonly number[];
  /** Wall clock (ms): expiry times are wall-clock. */
  now: () => number;
  /** A warning is due; must not throw. `secondsLeft` is what is left now, rounded. */
  warn(key: string, value: T, expiresAt: number, secondsLeft: number): void;
}

interface Watched<T> {
  value: T;
  expiresAt: number;
  /** The index (in `offsets`) of the next warning. */
  next: number;
}

export function createWarningClock<T>(deps: WarningClockDeps<T>) {
  const { now } = deps;
  /** Longest first, in ms. */
  const offsets = [...new Set(deps.offsetsS)].sort((a, b) => b - a).map((s) => s * 1000);
  const watched = new Map<string, Watched<T>>();
  let timer: NodeJS.Timeout | undefined;
  let armedFor: number | undefined;

  const dueAt = (w: Watched<T>) => w.expiresAt - offsets[w.next]!;
  /** The first warning still ahead at `t`; `offsets.length` when none is. */
  const firstAhead = (expiresAt: number, t: number) => {
    let i = 0;
    while (i < offsets.length && expiresAt - offsets[i]! <= t) i += 1;
    return i;
  };

  function setFor(at: number | undefined): void {
    clearTimeout(timer);
    timer = undefined;
    armedFor = at;
    if (at === undefined) return;
    timer = setTimeout(onTimer, Math.min(Math.max(0, at - now()), MAX_TIMER_MS));
    timer.unref();
  }

  /** Arms the timer for the earliest warning due (a forgotten session's timer just finds nothing). */
  function rearm(): void {
    let earliest: number | undefined;
    for (const w of watched.values()) {
      const at = dueAt(w);
      if (earliest === undefined || at < earliest) earliest = at;
    }
    setFor(earliest);
  }

  function onTimer(): void {
    timer = undefined;
    armedFor = undefined;
    const t = now();
    for (const [key, w] of [...watched]) {
      if (dueAt(w) > t) continue;
      // A late timer (a busy loop, a clock step) gives the latest warning passed, not each one.
      const ahead = firstAhead(w.expiresAt, t);
      if (ahead >= offsets.length) watched.delete(key);
      else w.next = ahead;
      const left = w.expiresAt - t;
      if (left > 0) deps.warn(key, w.value, w.expiresAt, Math.round(left / 1000));
    }
    rearm();
  }

  return {
    /** Warns of `key`'s end at `expiresAt` (ms), from the warnings still ahead; replaces what was watched for it. */
    watch(key: string, expiresAt: number, value: T): void {
      const next = firstAhead(expiresAt, now());
      if (next >= offsets.length) {
        watched.delete(key);
        return;
      }
      const w = { value, expiresAt, next };
      watched.set(key, w);
      if (armedFor === undefined || dueAt(w) < armedFor) setFor(dueAt(w));
    },

    /** No more warnings for `key` (its session closed, its stream ended). */
    forget(key: string): void {
      watched.delete(key);
      if (watched.size === 0) setFor(undefined);
    },

    /** Whether `key` has warnings ahead (tests). */
    watching: (key: string): boolean => watched.has(key),

    /** Whether the timer is set (tests: nothing is left running). */
    armed: (): boolean => timer !== undefined,

    /** Forgets everything and clears the timer. */
    close(): void {
      watched.clear();
      setFor(undefined);
    },
  };
}
export type WarningClock<T> = ReturnType<typeof createWarningClock<T>>;
