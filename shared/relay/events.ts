/**
 * @module The relay's events: what the API tells the side that reaches devices, once a change is
 * committed. Declared here once; the relay implements it (one process), and so does a cluster's
 * control node (its relay, then a broadcast to every node: docs/cluster.md). The API calls it and
 * never imports either; the composition root hands it one of them.
 */
import type { CloseReason, SessionProtocol } from '../protocol/control-channel';

/** A session that was opened, as the relay needs it (the API's session record is one). */
export interface OpenedSession {
  session_id: string;
  device_id: string;
  protocol: SessionProtocol;
  expires_at: string;
}

/** A session whose end moved (an extend): its new `expires_at`. */
export type ExtendedSession = OpenedSession;

/** A session that closed or expired; no reason recorded: `closed`. */
export interface ClosedSession {
  session_id: string;
  device_id: string;
  close_reason: CloseReason | null;
}

export interface Relay {
  /** A session was opened for a device: tell its agent (it learns the expiry). */
  sessionOpened(session: OpenedSession): void;
  /** A session's end moved (an extend): tell its agent, and re-arm the notices of its stream. None: a relay that holds neither. */
  sessionExtended?(session: ExtendedSession): void;
  /** A session closed or expired: end its streams and tell the agent; what it returns settles once their byte counts are written. */
  sessionClosed(session: ClosedSession): void | Promise<void>;
  /** A device left the registry: disconnect its agent (`AGENT_CLOSE.deviceDeleted`). */
  deviceDeleted(deviceId: string): void;
  /** A device got a new agent token: disconnect the agent that still uses the old one (`AGENT_CLOSE.tokenRotated`). */
  agentTokenRotated(deviceId: string): void;
  /** A token was revoked: close the streams it admitted (4401). */
  tokenRevoked(tokenId: string): void;
  /**
   * Whether devices can be reached now; a cluster's control node says no while its bus (NATS)
   * is away, and sessions are refused (503) meanwhile. None: always.
   */
  available?(): boolean;
}

/** The reason a closed session's streams and agent are given. */
export const closeReasonOf = (session: ClosedSession): CloseReason => session.close_reason ?? 'closed';

/** A relay that does nothing: an API run without a relay (tests, tools). */
export const idleRelay: Relay = {
  sessionOpened() {},
  sessionExtended() {},
  sessionClosed() {},
  deviceDeleted() {},
  agentTokenRotated() {},
  tokenRevoked() {},
};
