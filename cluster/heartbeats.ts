/** @module The cluster's clocks, from the agents' heartbeat interval: when an agent or a node counts as gone. */

/** The agent heartbeat deadline: an agent silent this long is gone (two missed heartbeats). */
export const deadlineOf = (heartbeatMs: number): number => heartbeatMs * 2;

/** How often a node tells the control node it is alive: four times per deadline, at most every 5 s. */
export const nodeHeartbeatOf = (heartbeatMs: number): number => Math.max(50, Math.min(5_000, Math.floor(deadlineOf(heartbeatMs) / 4)));
