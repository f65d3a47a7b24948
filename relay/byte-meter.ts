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
  /** Adds byte counts to session records (asynchronously, when the records are a database's). */
  recordBytes(counts: Map<string, ByteCounts>): void | Promise<void>;
}

export function createByteMeter({ log, recordBytes }: ByteMeterDeps) {
  const unflushed = new Map<string, ByteCounts>();
  /** Writes under way: `settled()` waits for them. */
  const writing = new Set<Promise<void>>();
  const flusher = setInterval(flushAll, FLUSH_INTERVAL_MS);
  flusher.unref();

  function write(batch: Map<string, ByteCounts>): void {
    let done: Promise<void>;
    try {
      done = Promise.resolve(recordBytes(batch));
    } catch (err) {
      done = Promise.reject(err as Error);
    }
    const tracked: Promise<void> = done
      .catch((err: unknown) => log.error('could not record stream byte counts', { err }))
      .finally(() => writing.delete(tracked));
    writing.add(tracked);
  }

  function flushAll(): void {
    if (unflushed.size === 0) return;
    const batch = new Map(unflushed);
    unflushed.clear();
    write(batch);
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
      write(new Map([[sessionId, c]]));
    },

    /** Resolves once every count handed over so far is written (or failed, and was logged). */
    async settled(): Promise<void> {
      while (writing.size > 0) await Promise.all(writing);
    },

    /** Writes every count and stops the timer. */
    close(): void {
      clearInterval(flusher);
      flushAll();
    },
  };
}
export type ByteMeter = ReturnType<typeof createByteMeter>;
