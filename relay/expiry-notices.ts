/**
 * @module Notices to the clients of the streams this relay holds (docs/session-streams.md,
 * notices): `session_expiring` before the session's `expires_at`, from the grant the client was
 * admitted with, re-armed when the session is extended. Here, where the client's connection is,
 * whichever node's timer closes the session: a cluster's edge or a peer warns its own clients.
 * Written on the client's hop only: the device never gets it, a recording never holds it, and
 * port-forward streams get none (their peers fail on a text frame not of their protocol).
 */
import type { Logger } from '../shared/log';
import { NOTICE_PROTOCOLS } from '../shared/protocol/session-stream';
import { createWarningClock, expiringNotice } from '../shared/relay/expiry-warnings';
import type { Hop } from './hop';

/** What a notice needs of a stream: its client and its session. */
export interface NoticeTarget {
  client: Hop;
  grant: { sessionId: string; protocol: string; expiresAt: string };
}

export interface ExpiryNoticeDeps {
  /** Seconds before the end at which to warn (TETHER_SESSION_WARNINGS); empty: never. */
  offsetsS: readonly number[];
  now: () => number;
  log: Logger;
}

export function createExpiryNotices({ offsetsS, now, log }: ExpiryNoticeDeps) {
  const clock = createWarningClock<NoticeTarget>({
    offsetsS,
    now,
    warn(sessionId, stream, expiresAt, secondsLeft) {
      log.info('warning the client: the session expires soon', { session_id: sessionId, seconds_left: secondsLeft });
      stream.client.sendText(JSON.stringify(expiringNotice(sessionId, new Date(expiresAt).toISOString(), secondsLeft)));
    },
  });
  const takesNotices = (protocol: string) => (NOTICE_PROTOCOLS as readonly string[]).includes(protocol);

  return {
    /** A client was admitted to the stream (or its session's end moved): warn it before the end. */
    watch(stream: NoticeTarget): void {
      if (takesNotices(stream.grant.protocol)) clock.watch(stream.grant.sessionId, Date.parse(stream.grant.expiresAt), stream);
    },
    /** The session's stream lost its client. */
    forget: (sessionId: string): void => clock.forget(sessionId),
    /** Whether the timer is set (tests). */
    armed: (): boolean => clock.armed(),
    close: (): void => clock.close(),
  };
}
export type ExpiryNotices = ReturnType<typeof createExpiryNotices>;
