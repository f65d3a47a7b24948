/**
 * @module Which node holds each device's agent, by connection (docs/cluster.md, presence): a
 * connection is its node, its generation there, and the wall-clock time it began. A later
 * connection wins; the end of a connection counts only if it is the one held as current. So an
 * agent that moved from node A to node B is never marked offline by A's late disconnect, and a
 * late report of an older connection changes nothing.
 */

export interface Connection {
  node: string;
  generation: number;
  /** Wall clock (ms) when it began. */
  since: number;
}

export class HolderTable {
  #current = new Map<string, Connection>();

  /**
   * A connection began: `online` when the device was not held (or by another connection),
   * `known` when this very connection was held already (a snapshot repeats it), `stale` when a
   * later connection is held (this report came late).
   */
  online(deviceId: string, c: Connection): 'online' | 'known' | 'stale' {
    const held = this.#current.get(deviceId);
    if (held && (held.since > c.since || (held.node === c.node && held.generation > c.generation))) return 'stale';
    this.#current.set(deviceId, c);
    return held && held.node === c.node && held.generation === c.generation ? 'known' : 'online';
  }

  /** A connection ended; true when it was the device's current one (the device is offline now). */
  offline(deviceId: string, c: Omit<Connection, 'since'>): boolean {
    const held = this.#current.get(deviceId);
    if (!held || held.node !== c.node || held.generation !== c.generation) return false;
    this.#current.delete(deviceId);
    return true;
  }

  /** Forgets the devices `node` holds but `keep`; returns them (they are offline now). */
  dropNode(node: string, keep: ReadonlySet<string> = new Set()): string[] {
    const dropped: string[] = [];
    for (const [deviceId, held] of this.#current) {
      if (held.node !== node || keep.has(deviceId)) continue;
      this.#current.delete(deviceId);
      dropped.push(deviceId);
    }
    return dropped;
  }

  holder(deviceId: string): Connection | undefined {
    return this.#current.get(deviceId);
  }

  get size(): number {
    return this.#current.size;
  }
}
