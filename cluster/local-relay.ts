/**
 * @module What a cluster node needs from the relay that runs on it (the composition root passes
 * the relay in; cluster/ imports neither relay/ nor api/): the relay's events (shared/relay/events.ts),
 * which a node acts on for the agents and streams it holds, and what it reports of its agents.
 */
import type { RelayToAgentMessage } from '../shared/protocol/control-channel';
import type { Relay } from '../shared/relay/events';

/** An agent connected to this node. */
export interface HeldAgent {
  deviceId: string;
  generation: number;
  since: number;
  agentVersion: string | null;
  forwardAllow: readonly string[] | null;
}

export interface LocalRelay extends Relay {
  /** Sends a control message to a device's agent if it is connected here; false if it is not. */
  sendToAgent(deviceId: string, msg: RelayToAgentMessage): boolean;
  /** An agent refused the stream `streamId`; false when no client waits for it here. */
  streamRefused(deviceId: string, streamId: string, message: string): boolean;
  agents(): Iterable<HeldAgent>;
  agentCount(): number;
  disconnectAgents(code: number, reason: string): void;
}
