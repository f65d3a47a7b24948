/**
 * @module The relay's events across the cluster (docs/cluster.md, broadcasts): the control node
 * acts on each event with its own relay and broadcasts it, and every other node acts on the
 * broadcast with its relay. Both directions of each event are here, side by side; only the
 * control node may broadcast (the bus's permissions), so a broadcast is the control node's word.
 */
import type { BroadcastMessage } from '../shared/protocol/cluster';
import { closeReasonOf, type Relay } from '../shared/relay/events';
import type { LocalRelay } from './local-relay';

export interface BroadcastingRelayDeps {
  /** The control node's own relay, once it runs. */
  localRelay(): LocalRelay | undefined;
  broadcast(msg: BroadcastMessage): void;
  /** Whether sessions can be opened now (the bus is up). */
  available(): boolean;
  /** A session closed: the control node forgets which nodes its stream was granted to. */
  sessionClosed(sessionId: string): void;
}

/** The control node's relay: each event for its own relay, then for every node; it says whether the bus is up. */
export function broadcastingRelay(deps: BroadcastingRelayDeps): Required<Relay> {
  const { localRelay, broadcast } = deps;
  return {
    sessionOpened(s) {
      localRelay()?.sessionOpened(s);
      broadcast({ type: 'session.opened', session_id: s.session_id, device_id: s.device_id, protocol: s.protocol, expires_at: s.expires_at });
    },
    sessionExtended(s) {
      localRelay()?.sessionExtended?.(s);
      broadcast({ type: 'session.extended', session_id: s.session_id, device_id: s.device_id, protocol: s.protocol, expires_at: s.expires_at });
    },
    async sessionClosed(s) {
      const counted = localRelay()?.sessionClosed(s);
      broadcast({ type: 'session.closed', session_id: s.session_id, device_id: s.device_id, reason: closeReasonOf(s) });
      deps.sessionClosed(s.session_id);
      await counted;
    },
    deviceDeleted(deviceId) {
      localRelay()?.deviceDeleted(deviceId);
      broadcast({ type: 'device.deleted', device_id: deviceId });
    },
    agentTokenRotated(deviceId) {
      localRelay()?.agentTokenRotated(deviceId);
      broadcast({ type: 'device.token_rotated', device_id: deviceId });
    },
    tokenRevoked(tokenId) {
      localRelay()?.tokenRevoked(tokenId);
      broadcast({ type: 'token.revoked', token_id: tokenId });
    },
    available: () => deps.available(),
  };
}

/** Acts on a broadcast with a node's relay: the relay's events, and a stream another node's agent refused. */
export function applyBroadcast(localRelay: LocalRelay, msg: BroadcastMessage): void {
  switch (msg.type) {
    case 'session.opened':
      return localRelay.sessionOpened(msg);
    case 'session.extended':
      return localRelay.sessionExtended?.(msg);
    case 'session.closed':
      // The counts of the streams it ends reach the control node over the bus, not from here.
      void localRelay.sessionClosed({ session_id: msg.session_id, device_id: msg.device_id, close_reason: msg.reason });
      return;
    case 'token.revoked':
      return localRelay.tokenRevoked(msg.token_id);
    case 'device.deleted':
      return localRelay.deviceDeleted(msg.device_id);
    case 'device.token_rotated':
      return localRelay.agentTokenRotated(msg.device_id);
    case 'stream.refused':
      localRelay.streamRefused(msg.device_id, msg.stream_id, msg.message);
      return;
    case 'resync':
      return; // the edge's own business (it resends its presence)
  }
}
