/**
 * @module Liveness of the agents' control channels: the relay pings each agent every
 * `heartbeatMs` and drops one silent for two intervals (checked four times per interval, so
 * silence is found within 2.25 intervals: 45 s at 20 s), on the monotonic clock, immune to clock
 * steps. What an agent says or pongs counts as a heartbeat; they are reported in batches, once per
 * interval, for `last_seen_at`.
 */
import type { WebSocket } from 'ws';
import type { Logger } from '../shared/log';
import type { AgentEntry, AgentRegistry } from './registry';

const MISSED_HEARTBEATS = 2;

export interface AgentHeartbeatsDeps {
  registry: AgentRegistry<WebSocket>;
  heartbeatMs: number;
  /** Wall clock (ms), for `last_seen_at`. */
  now: () => number;
  log: Logger;
  /** Heartbeats since the last call, by device. */
  seen(lastSeen: Map<string, number>): void;
}

export function createAgentHeartbeats(deps: AgentHeartbeatsDeps) {
  const { registry, heartbeatMs, log } = deps;
  const seenSinceFlush = new Map<string, number>();
  const mono = () => performance.now();
  let lastFlush = mono();

  function sweep(): void {
    const t = mono();
    for (const entry of registry.entries()) {
      if (t - entry.lastSeenAt > heartbeatMs * MISSED_HEARTBEATS) {
        log.warn('agent missed heartbeats; dropping it', { device_id: entry.deviceId, silent_ms: t - entry.lastSeenAt });
        entry.socket.terminate();
      } else if (t - entry.lastPingAt >= heartbeatMs) {
        entry.lastPingAt = t;
        entry.socket.ping();
      }
    }
    if (t - lastFlush >= heartbeatMs && seenSinceFlush.size > 0) {
      lastFlush = t;
      deps.seen(new Map(seenSinceFlush));
      seenSinceFlush.clear();
    }
  }
  const sweeper = setInterval(sweep, Math.max(10, Math.floor(heartbeatMs / 4)));

  return {
    /** The agent proved to be alive (a pong or a message). */
    seen(entry: AgentEntry<WebSocket>): void {
      entry.lastSeenAt = mono();
      seenSinceFlush.set(entry.deviceId, deps.now());
    },
    /** The agent's connection closed: its heartbeats since the last report are not reported. */
    forget(deviceId: string): void {
      seenSinceFlush.delete(deviceId);
    },
    /** Stops pinging and checking. */
    stop(): void {
      clearInterval(sweeper);
    },
    /** Reports the heartbeats not reported yet. */
    flush(): void {
      if (seenSinceFlush.size > 0) deps.seen(new Map(seenSinceFlush));
    },
  };
}
