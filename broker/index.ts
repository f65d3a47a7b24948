/**
 * @module The relay broker: the agent control channel (and, with it, presence) and the routing of
 * WebSocket upgrades. It knows nothing of the database: the composition root passes in how to
 * authenticate agents and where presence goes.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import { AGENT_CLOSE, AGENT_CONNECT_PATH, type CloseReason, type SessionProtocol } from '../shared/protocol';
import { createAgentChannel, type PresenceSink } from './agents';
import { rejectUpgrade } from './reject';

export const DEFAULT_HEARTBEAT_MS = 20_000;

export interface BrokerDeps {
  log: Logger;
  metrics: Metrics;
  now: () => number;
  heartbeatMs: number;
  authenticateAgent(deviceId: string, token: string): boolean;
  presence: PresenceSink;
}

export interface SessionNotice {
  session_id: string;
  device_id: string;
  protocol: SessionProtocol;
  expires_at: string;
}

export function createBroker(deps: BrokerDeps) {
  const log = deps.log;
  const agents = createAgentChannel({
    log: log.child({ component: 'agents' }),
    now: deps.now,
    heartbeatMs: deps.heartbeatMs,
    authenticateAgent: deps.authenticateAgent,
    presence: deps.presence,
  });
  deps.metrics.gauge('tether_agents_online', 'Agents connected to the broker.', () => agents.registry.size);
  const tunnelBytes = deps.metrics.counter('tether_tunnel_bytes_total', 'Payload bytes relayed through tunnels, by direction.');
  // Registered now so the series exist from the first scrape.
  tunnelBytes.inc({ direction: 'to_device' }, 0);
  tunnelBytes.inc({ direction: 'from_device' }, 0);

  return {
    /** Takes an HTTP upgrade request; anything that is not a broker path gets 404. */
    handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
      const path = (req.url ?? '').split('?')[0];
      if (path === AGENT_CONNECT_PATH) agents.handleUpgrade(req, socket, head);
      else rejectUpgrade(socket, 404, 'not_found', `no WebSocket endpoint at ${path}`);
    },

    /** Tells the device a session was opened for it. */
    sessionOpened(s: SessionNotice): void {
      agents.sendTo(s.device_id, { type: 'session.opened', session_id: s.session_id, protocol: s.protocol, expires_at: s.expires_at });
    },

    /** Tells the device to end a session's handler. */
    sessionClosed(s: { session_id: string; device_id: string }, reason: CloseReason): void {
      agents.sendTo(s.device_id, { type: 'session.close', session_id: s.session_id, reason });
    },

    /** Disconnects the agent of a deleted device. */
    deviceDeleted(deviceId: string): void {
      agents.disconnect(deviceId, AGENT_CLOSE.deviceDeleted, 'device deleted');
    },

    isOnline: (deviceId: string): boolean => agents.registry.get(deviceId) !== undefined,
    agentsOnline: (): number => agents.registry.size,

    /** Disconnects every agent (1001) and stops the heartbeat timer. */
    close: () => agents.close(),
  };
}
export type Broker = ReturnType<typeof createBroker>;
