/**
 * @module What an edge node does besides its requests: it follows the broadcasts (a session
 * closed, a token revoked, a device deleted, a stream refused) on its own relay, and delivers
 * the control node's commands to the agents it holds. Only the control node may publish either
 * (the bus's permissions), so both are taken as the control node's word.
 */
import { BROADCAST_SUBJECT, broadcastMessage, nodeCommand, nodeSubject, type BroadcastMessage } from '../shared/protocol/cluster';
import type { Logger } from '../shared/log';
import { applyBroadcast } from './broadcasts';
import type { Bus } from './bus';
import type { LocalRelay } from './local-relay';

export interface NodeRoleDeps {
  bus: Bus;
  /** The node's name: its commands come on `tether.node.<name>`. */
  nodeName: string;
  localRelay: LocalRelay;
  log: Logger;
  /** Something every node learns (an edge also empties its caches by it). */
  onBroadcast?(msg: BroadcastMessage): void;
}

export function followCluster(deps: NodeRoleDeps): void {
  const { bus, localRelay, log } = deps;
  bus.on(BROADCAST_SUBJECT, broadcastMessage, ({ body }) => {
    deps.onBroadcast?.(body);
    applyBroadcast(localRelay, body);
  });
  bus.on(nodeSubject(deps.nodeName), nodeCommand, ({ body, reply }) => {
    const sent = localRelay.sendToAgent(body.device_id, body.message);
    if (!sent) log.debug('asked to reach an agent that is not here', { device_id: body.device_id });
    reply({ sent });
  });
}
