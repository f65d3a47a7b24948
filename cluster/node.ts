/**
 * @module What every cluster node does, control or edge: it follows the broadcasts (a session
 * closed, a token revoked, a device deleted, a stream refused) on its own broker, and delivers
 * the control node's commands to the agents it holds.
 */
import { broadcastMessage, nodeCommand, nodeSubject, SUBJECTS, type BroadcastMessage } from '../shared/cluster';
import type { Logger } from '../shared/log';
import type { Bus } from './bus';
import type { LocalBroker } from './ports';

export interface NodeRoleDeps {
  bus: Bus;
  nodeId: string;
  broker: LocalBroker;
  log: Logger;
  /** Something every node learns (an edge also empties its caches by it). */
  onBroadcast?(msg: BroadcastMessage): void;
}

export function followCluster(deps: NodeRoleDeps): void {
  const { bus, broker, log } = deps;
  bus.on(SUBJECTS.broadcast, broadcastMessage, ({ body }) => {
    deps.onBroadcast?.(body);
    switch (body.type) {
      case 'session.opened':
        broker.sessionOpened(body);
        break;
      case 'session.closed':
        broker.sessionClosed(body, body.reason);
        break;
      case 'token.revoked':
        broker.tokenRevoked(body.token_id);
        break;
      case 'device.deleted':
        broker.deviceDeleted(body.device_id);
        break;
      case 'device.token_rotated':
        broker.agentTokenRotated(body.device_id);
        break;
      case 'stream.refused':
        broker.streamRefused(body.device_id, body.stream_id, body.message);
        break;
      case 'resync':
        break; // the edge's own business (onBroadcast)
    }
  });
  bus.on(nodeSubject(deps.nodeId), nodeCommand, ({ body, reply }) => {
    const sent = broker.sendToAgent(body.device_id, body.message);
    if (!sent) log.debug('asked to reach an agent that is not here', { device_id: body.device_id });
    reply({ sent });
  });
}
