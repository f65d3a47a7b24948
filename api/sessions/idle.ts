/**
 * @module Which open sessions nobody uses: a session with no client connected to its stream for
 * the idle time is due to close (`idle`), so a client that died (a `kill -9`ed `tether shell`, a
 * closed browser tab) cannot hold the device's one session of that protocol for its whole TTL.
 * The clock of a session starts when it opens and again whenever its last client leaves.
 * Attachment is known only in memory (the relay, or a cluster's edges, report it): sessions open
 * when this process starts get a fresh window from then. What closing means is the caller's.
 */

interface Entry {
  /** Clients connected now (one at a time per session, but reports may cross). */
  clients: number;
  /** Since when no client is connected (ms); undefined while one is. */
  idleSince: number | undefined;
}

export interface IdleClockDeps {
  /** How long a session may go without a client (ms). */
  idleMs: number;
  now: () => number;
}

export function createIdleClock({ idleMs, now }: IdleClockDeps) {
  /** Every open session this process knows of. */
  const sessions = new Map<string, Entry>();

  return {
    idleMs,

    /** An open session with no client yet, idle since `at` (ms): its opening, or this process's start. */
    opened(sessionId: string, at: number): void {
      if (!sessions.has(sessionId)) sessions.set(sessionId, { clients: 0, idleSince: at });
    },

    /** A client connected to the session's stream; false when the session is not open here. */
    attached(sessionId: string): boolean {
      const entry = sessions.get(sessionId);
      if (!entry) return false;
      entry.clients += 1;
      entry.idleSince = undefined;
      return true;
    },

    /**
     * A client left the session's stream; when it was the last, the session's idle clock starts
     * again and the moment it is due (ms) is returned.
     */
    detached(sessionId: string): number | undefined {
      const entry = sessions.get(sessionId);
      if (!entry) return undefined;
      // A leave without a join (one that joined before this process started) counts as the last.
      entry.clients = Math.max(0, entry.clients - 1);
      if (entry.clients > 0) return undefined;
      entry.idleSince = now();
      return entry.idleSince + idleMs;
    },

    /** The session closed: forget it. */
    forget(sessionId: string): void {
      sessions.delete(sessionId);
    },

    /** The earliest moment (ms) a session becomes due, or undefined when none can. */
    nextDue(): number | undefined {
      let earliest: number | undefined;
      for (const { idleSince } of sessions.values()) {
        if (idleSince !== undefined && (earliest === undefined || idleSince < earliest)) earliest = idleSince;
      }
      return earliest === undefined ? undefined : earliest + idleMs;
    },

    /** The sessions that have had no client for the idle time by now. */
    dueIds(): string[] {
      const t = now();
      return [...sessions].filter(([, e]) => e.idleSince !== undefined && e.idleSince + idleMs <= t).map(([id]) => id);
    },
  };
}
export type IdleClock = ReturnType<typeof createIdleClock>;
