/**
 * @module What the other peers tell this one (cluster/peers.ts carries it, docs/peers.md): their
 * API events for the event streams here, tokens revoked and users changed for the token cache,
 * clients joining and leaving session streams for the idle clock, and sessions opening, extended
 * and closing for the expiry and warning timers. A peer's word is input too: its events are checked before they are sent on.
 */
import { serverEvent } from '../shared/api/events';
import type { EventHub } from './events/hub';
import type { TokenResolver } from './identity/token-cache';
import type { Sessions } from './sessions/sessions';

export function peerInbox(events: EventHub, tokens: TokenResolver, sessions: Sessions) {
  return {
    /** An API event of another peer, for the event streams here. */
    event(e: unknown): void {
      const parsed = serverEvent.safeParse(e);
      if (parsed.success) events.deliver(parsed.data);
    },
    identity(tokenIds: readonly string[], users: readonly string[]): void {
      for (const tokenId of tokenIds) tokens.revoked(tokenId);
      for (const username of users) tokens.userChanged(username);
    },
    streams(attached: readonly string[], detached: readonly string[]): void {
      for (const id of attached) sessions.streamAttached(id);
      for (const id of detached) sessions.streamDetached(id);
    },
    /** Another peer opened a session: this one's timers look at it too (whichever peer looks first closes it). */
    sessionOpened: (sessionId: string, expiresAt: string): void => sessions.openedElsewhere(sessionId, Date.parse(expiresAt)),
    /** Another peer extended a session: this one's timers look at its new end (and warn before it). */
    sessionExtended: (sessionId: string, expiresAt: string): void => sessions.extendedElsewhere(sessionId, Date.parse(expiresAt)),
    sessionClosed: (sessionId: string): void => sessions.closedElsewhere(sessionId),
  };
}
export type PeerInbox = ReturnType<typeof peerInbox>;
