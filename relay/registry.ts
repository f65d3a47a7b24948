/**
 * @module Which agents are connected, by device, with a generation per connection (frp's
 * `server/registry`). A device has at most one current connection; a newer one replaces it, and
 * the late close of a replaced connection cannot remove its successor, so presence never flips
 * to offline while an agent is connected.
 */

export interface AgentEntry<S> {
  deviceId: string;
  /** Grows with every connection the registry has seen; identifies this one. */
  generation: number;
  socket: S;
  agentVersion: string | null;
  /** The port-forward patterns the agent announced; null when it announced none. */
  forwardAllow: readonly string[] | null;
  /** Wall clock (ms) at connection: orders one device's connections across cluster nodes. */
  since: number;
  /** Monotonic ms (performance.now()), like the two below. */
  connectedAt: number;
  /** Last time the agent proved to be alive (pong or message). */
  lastSeenAt: number;
  lastPingAt: number;
}

export interface AgentInfo {
  deviceId: string;
  generation: number;
  agentVersion: string | null;
  connectedAt: number;
  lastSeenAt: number;
}

export class AgentRegistry<S> {
  #current = new Map<string, AgentEntry<S>>();
  #nextGeneration = 1;

  /** Registers a new connection; returns it and the connection it replaced, if any. */
  attach(deviceId: string, socket: S, agentVersion: string | null, now: number, announced: { since?: number; forwardAllow?: readonly string[] | null } = {}) {
    const entry: AgentEntry<S> = {
      deviceId,
      generation: this.#nextGeneration++,
      socket,
      agentVersion,
      forwardAllow: announced.forwardAllow ?? null,
      since: announced.since ?? 0,
      connectedAt: now,
      lastSeenAt: now,
      lastPingAt: now,
    };
    const replaced = this.#current.get(deviceId);
    this.#current.set(deviceId, entry);
    return { entry, replaced };
  }

  /** Removes `entry` if it is still the device's current connection; true if it was. */
  detach(entry: AgentEntry<S>): boolean {
    if (this.#current.get(entry.deviceId) !== entry) return false;
    this.#current.delete(entry.deviceId);
    return true;
  }

  /** The current connection of a device. */
  get(deviceId: string): AgentEntry<S> | undefined {
    return this.#current.get(deviceId);
  }

  get size(): number {
    return this.#current.size;
  }

  entries(): IterableIterator<AgentEntry<S>> {
    return this.#current.values();
  }

  /** A snapshot of the connected agents (copies, safe to keep). */
  list(): AgentInfo[] {
    return [...this.#current.values()].map(({ deviceId, generation, agentVersion, connectedAt, lastSeenAt }) => ({
      deviceId,
      generation,
      agentVersion,
      connectedAt,
      lastSeenAt,
    }));
  }
}
