/**
 * @module What the API needs from the relay, as an interface the composition root implements
 * with the broker (the API never imports the broker). Calls happen after the change is committed.
 */
import type { SessionRow } from './store/sessions';

export interface RelayPort {
  /** A session was opened for a device: tell its agent (it learns the expiry). */
  sessionOpened(session: SessionRow): void;
  /** A session closed or expired: tell the agent and end the session's streams. */
  sessionClosed(session: SessionRow): void;
  /** A device left the registry: disconnect its agent. */
  deviceDeleted(deviceId: string): void;
  /** A device got a new agent token: disconnect the agent that still uses the old one. */
  agentTokenRotated(deviceId: string): void;
  /** A token was revoked: close the streams it admitted. */
  tokenRevoked(tokenId: string): void;
  /**
   * Whether devices can be reached now; a cluster's control node says no while its bus (NATS)
   * is away, and sessions are refused (503) meanwhile. None: always.
   */
  available?(): boolean;
}

/** A relay that does nothing, for an API run without a broker. */
export const detachedRelay: RelayPort = {
  sessionOpened() {},
  sessionClosed() {},
  deviceDeleted() {},
  agentTokenRotated() {},
  tokenRevoked() {},
};
