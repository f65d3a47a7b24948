/**
 * @module Byte counts of session streams: counted per session as frames are forwarded, written
 * to the session records at least every second (so a record's counters are at most a second
 * stale while it is open) and at once when a stream ends (so a closed session's are exact).
 */
import type { Logger } from '../shared/log';

const FLUSH_INTERVAL_MS = 1000;

export interface ByteCounts {
  toDevice: number;
  fromDevice: number;
}

export interface ByteMeterDeps {
  log: Logger;
  /** Adds byte counts to session records. */
  recordBytes(counts: Map<string, ByteCounts>): void;
}

export function createByteMeter({ log, recordBytes }: ByteMeterDeps) {
  const unflushed = new Map<string, ByteCounts>();
  const flusher = setInterval(flushAll, FLUSH_INTERVAL_MS);
  flusher.unref();

  function flushAll(): void {
    if (unflushed.size === 0) return;
    const batch = new Map(unflushed);
    unflushed.clear();
    try {
      recordBytes(batch);
    } catch (err) {
      log.error('could not record stream byte counts', { err });
    }
  }

  return {
    count(sessionId: string, key: keyof ByteCounts, n: number): void {
      let c = unflushed.get(sessionId);
      if (!c) unflushed.set(sessionId, (c = { toDevice: 0, fromDevice: 0 }));
      c[key] += n;
    },

    /** Writes one session's counts now (its stream ended). */
    flush(sessionId: string): void {
      const c = unflushed.get(sessionId);
      if (!c) return;
      unflushed.delete(sessionId);
      recordBytes(new Map([[sessionId, c]]));
    },

    /** Writes every count and stops the timer. */
    close(): void {
      clearInterval(flusher);
      flushAll();
    },
  };
}
export type ByteMeter = ReturnType<typeof createByteMeter>;
