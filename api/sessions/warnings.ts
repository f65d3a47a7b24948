/**
 * @module The `session.expiring` event (docs/http-api.md, events): TETHER_SESSION_WARNINGS before an
 * open session's `expires_at`, again after an extend. Every peer watches every open session (as the
 * expiry timer does), but only the one that leads the housekeeping tells, so each warning goes out
 * once; it reads the session first, so a warning a missed extend made stale is not told but
 * watched again at the session's real end. The stream's own notice is the relay's (where the
 * client is); this is for the event streams.
 */
import type { Logger } from '../../shared/log';
import { createWarningClock } from '../../shared/relay/expiry-warnings';
import type { Store } from '../store/index';

/** What `session.expiring` carries (`shared/api/events.ts`). */
export interface ExpiringSession {
  session_id: string;
  device_id: string;
  protocol: string;
  opened_by: string;
  expires_at: string;
  seconds_left: number;
}

export interface SessionWarningsDeps {
  store: Store;
  log: Logger;
  now: () => number;
  /** Seconds before the end (TETHER_SESSION_WARNINGS); empty: no events. */
  offsetsS: readonly number[];
  /** Whether this process tells (it leads the housekeeping; always on SQLite). */
  leads: () => boolean;
  expiring(e: ExpiringSession): void;
}

export function createSessionWarnings({ store, log, now, offsetsS, leads, expiring }: SessionWarningsDeps) {
  const clock = createWarningClock<null>({
    offsetsS,
    now,
    warn(sessionId, _value, expiresAt, secondsLeft) {
      if (!leads()) return;
      void tell(sessionId, expiresAt, secondsLeft).catch((err: Error) =>
        log.warn('could not tell that a session expires soon', { session_id: sessionId, err: err.message }),
      );
    },
  });

  async function tell(sessionId: string, expiresAt: number, secondsLeft: number): Promise<void> {
    const row = await store.sessions.get(sessionId);
    if (!row || row.status !== 'open') return;
    if (Date.parse(row.expires_at) !== expiresAt) {
      // Extended on another peer and its word lost: its real end is watched instead.
      clock.watch(sessionId, Date.parse(row.expires_at), null);
      return;
    }
    const { session_id, device_id, protocol, opened_by, expires_at } = row;
    expiring({ session_id, device_id, protocol, opened_by, expires_at, seconds_left: secondsLeft });
  }

  return {
    /** The session ends at `expiresAt` (ms): opened or extended, here or on another peer. */
    watch: (sessionId: string, expiresAt: number): void => clock.watch(sessionId, expiresAt, null),
    forget: (sessionId: string): void => clock.forget(sessionId),
    /** At start-up: every open session. */
    async watchOpen(): Promise<void> {
      const { items } = await store.sessions.list({ status: 'open', limit: 1_000_000, offset: 0 });
      for (const s of items) clock.watch(s.session_id, Date.parse(s.expires_at), null);
    },
    /** Whether its timer is set (tests). */
    armed: (): boolean => clock.armed(),
    close: (): void => clock.close(),
  };
}
