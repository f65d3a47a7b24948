/**
 * @module The relay as the API uses it (shared/relay/events.ts), with its own session records: the
 * composition root passes the relay, or a cluster's control node (the API never imports either).
 * Calls happen after the change is committed.
 */
import { idleRelay, type Relay as RelayEvents } from '../shared/relay/events';
import type { SessionRow } from './store/sessions';

/** The relay's events, told with the API's session records (each one is what the relay needs of a session). */
export interface Relay extends RelayEvents {
  sessionOpened(session: SessionRow): void;
  sessionClosed(session: SessionRow): void | Promise<void>;
}

/** A relay that does nothing, for an API run without a relay. */
export const detachedRelay: Relay = idleRelay;
