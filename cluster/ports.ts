/**
 * @module What a cluster node needs from the broker that runs on it (the composition root passes
 * the broker in; cluster/ imports neither broker/ nor api/).
 */
import type { BrokerToAgentMessage, CloseReason, SessionProtocol } from '../shared/control-channel';

/** An agent connected to this node. */
export interface HeldAgent {
  deviceId: string;
  generation: number;
  since: number;
  agentVersion: string | null;
  forwardAllow: readonly string[] | null;
}

export interface LocalBroker {
  /** Sends a control message to a device's agent if it is connected here; false if it is not. */
  sendToAgent(deviceId: string, msg: BrokerToAgentMessage): boolean;
  sessionOpened(s: { session_id: string; device_id: string; protocol: SessionProtocol; expires_at: string }): void;
  /** Ends the session's stream if it runs here and tells the agent if it is connected here. */
  sessionClosed(s: { session_id: string; device_id: string }, reason: CloseReason): void;
  deviceDeleted(deviceId: string): void;
  agentTokenRotated(deviceId: string): void;
  tokenRevoked(tokenId: string): void;
  streamRefused(deviceId: string, streamId: string, message: string): boolean;
  agents(): Iterable<HeldAgent>;
  agentCount(): number;
  disconnectAgents(code: number, reason: string): void;
}

/** The agent heartbeat deadline: an agent silent this long is gone (two missed heartbeats). */
export const deadlineOf = (heartbeatMs: number): number => heartbeatMs * 2;

/** How often a node tells the control node it is alive: four times per deadline, at most every 5 s. */
export const nodeHeartbeatOf = (heartbeatMs: number): number => Math.max(50, Math.min(5_000, Math.floor(deadlineOf(heartbeatMs) / 4)));
