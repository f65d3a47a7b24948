/**
 * @module Peers: `tether server` processes on one PostgreSQL database and one NATS bus (CONTRACT
 * 10.1, docs/peers.md). None is special. Every decision is the database's (a session opens or
 * closes once, whichever peer asks); the bus only tells the other peers what happened here so that
 * they act on it at once: the relay's events reach the peer that holds the device's agent, the
 * API's events reach every `GET /v1/events`, stream clients coming and going reach every peer's
 * idle clock, and revoked tokens leave every peer's cache. Messages from this run are ignored when
 * they come back; a message lost while the bus is away costs time, never correctness (the expiry
 * sweep, the token cache's few seconds and the database cover it).
 */
import type { Logger } from '../shared/log';
import type { BroadcastMessage } from '../shared/protocol/cluster';
import { PEER_SUBJECTS, peerEventMessage, peerIdentityMessage, peerRelayMessage, peerStreamsMessage } from '../shared/protocol/peers';
import { closeReasonOf, type Relay } from '../shared/relay/events';
import { applyBroadcast } from './broadcasts';
import type { Bus } from './bus';
import type { LocalRelay } from './local-relay';

export interface PeerLinkDeps {
  bus: Bus;
  /** This run's id: what it publishes carries it, and what carries it is ignored on the way back. */
  run: string;
  log: Logger;
  /** This peer's relay, once it runs: the other peers' relay events are acted on with it. */
  localRelay(): LocalRelay | undefined;
  /** Another peer's relay event, after the local relay acted on it (a session opened elsewhere: arm the timers). */
  onRelayEvent(event: BroadcastMessage): void;
  /** Another peer's API event, for this peer's event streams (unchecked: the receiver validates it). */
  onEvent(event: { event: string; data: Record<string, unknown> }): void;
  /** Clients joined or left session streams on another peer. */
  onStreams(attached: readonly string[], detached: readonly string[]): void;
  /** Tokens revoked and users changed on another peer. */
  onIdentity(tokens: readonly string[], users: readonly string[]): void;
}

export function createPeerLink(deps: PeerLinkDeps) {
  const { bus, run, log } = deps;
  const mine = (from: string) => from === run;

  bus.on(PEER_SUBJECTS.relay, peerRelayMessage, ({ body }) => {
    if (mine(body.from)) return;
    const local = deps.localRelay();
    if (local) applyBroadcast(local, body.event);
    deps.onRelayEvent(body.event);
  });
  bus.on(PEER_SUBJECTS.event, peerEventMessage, ({ body }) => {
    if (!mine(body.from)) deps.onEvent(body.event);
  });
  bus.on(PEER_SUBJECTS.streams, peerStreamsMessage, ({ body }) => {
    if (!mine(body.from)) deps.onStreams(body.attached, body.detached);
  });
  bus.on(PEER_SUBJECTS.identity, peerIdentityMessage, ({ body }) => {
    if (!mine(body.from)) deps.onIdentity(body.tokens, body.users);
  });

  /** Publishes `body` to every peer; while the bus is away it is dropped, and said so. */
  function publish(subject: string, body: object): void {
    if (!bus.publish(subject, { from: run, ...body })) log.debug('the bus is away: the other peers learn this later', { subject });
  }
  const relayEvent = (event: BroadcastMessage) => publish(PEER_SUBJECTS.relay, { event });

  /** The relay the API tells: this peer's relay, then every other peer's. */
  const relay: Relay = {
    sessionOpened(s) {
      deps.localRelay()?.sessionOpened(s);
      relayEvent({ type: 'session.opened', session_id: s.session_id, device_id: s.device_id, protocol: s.protocol, expires_at: s.expires_at });
    },
    sessionExtended(s) {
      deps.localRelay()?.sessionExtended?.(s);
      relayEvent({ type: 'session.extended', session_id: s.session_id, device_id: s.device_id, protocol: s.protocol, expires_at: s.expires_at });
    },
    async sessionClosed(s) {
      const counted = deps.localRelay()?.sessionClosed(s);
      relayEvent({ type: 'session.closed', session_id: s.session_id, device_id: s.device_id, reason: closeReasonOf(s) });
      await counted;
    },
    deviceDeleted(deviceId) {
      deps.localRelay()?.deviceDeleted(deviceId);
      relayEvent({ type: 'device.deleted', device_id: deviceId });
    },
    agentTokenRotated(deviceId) {
      deps.localRelay()?.agentTokenRotated(deviceId);
      relayEvent({ type: 'device.token_rotated', device_id: deviceId });
    },
    tokenRevoked(tokenId) {
      deps.localRelay()?.tokenRevoked(tokenId);
      relayEvent({ type: 'token.revoked', token_id: tokenId });
    },
  };

  return {
    relay,
    /** An API event of this peer, for the other peers' event streams. */
    event: (event: { event: string; data: object }) => publish(PEER_SUBJECTS.event, { event }),
    /** Clients joined or left session streams here. */
    streams: (attached: readonly string[], detached: readonly string[]) => publish(PEER_SUBJECTS.streams, { attached, detached }),
    /** Tokens revoked or users changed here. */
    identity: (tokens: readonly string[], users: readonly string[]) => publish(PEER_SUBJECTS.identity, { tokens, users }),
  };
}
export type PeerLink = ReturnType<typeof createPeerLink>;
