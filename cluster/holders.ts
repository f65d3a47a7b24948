/**
 * @module Which node holds each device's agent, by connection (docs/cluster.md, presence). A
 * connection is its node, its generation there and the wall-clock time it began; the table keeps
 * every connection a node reported and has not reported ended, so a device is online while any
 * of them lasts, and the latest one is where it is reached. That makes the order of reports
 * across nodes irrelevant: an agent that moved from A to B is never marked offline by A's late
 * disconnect, and neither by the end of a connection that A registered late, after the agent
 * had already given up on it and gone to B (a slow handshake on a loaded node). On one node a
 * later generation replaces an earlier one (the relay closes the older connection of a device).
 *
 * Each node's connections also add up to a digest (an XOR of a hash per connection, kept as
 * they come and go) that the node computes over its own agents: when the two differ for longer
 * than messages take to arrive, reports were lost and the node resends its presence.
 */
import { createHash } from 'node:crypto';

export interface Connection<Info = unknown> {
  node: string;
  generation: number;
  /** Wall clock (ms) when it began. */
  since: number;
  /** What the node said about the agent (version, allow-list), written when it becomes current. */
  info?: Info;
}

/** What a device's connections amount to after a change. */
export type PresenceOutcome<Info> =
  | { kind: 'online'; current: Connection<Info> } // it was offline, or its current connection changed
  | { kind: 'offline' } // its last connection ended
  | { kind: 'unchanged' };

/** The 64 bits of a connection's hash, as two unsigned 32-bit halves (XOR adds and removes it). */
export function connectionHash(deviceId: string, generation: number): [number, number] {
  const h = createHash('sha256').update(`${deviceId}\n${generation}`).digest();
  return [h.readUInt32BE(0), h.readUInt32BE(4)];
}

/** A digest of a set of connections, independent of their order. */
export function digestOf(connections: Iterable<{ deviceId: string; generation: number }>): string {
  let hi = 0;
  let lo = 0;
  for (const c of connections) {
    const [a, b] = connectionHash(c.deviceId, c.generation);
    hi = (hi ^ a) >>> 0;
    lo = (lo ^ b) >>> 0;
  }
  return formatDigest(hi, lo);
}

const formatDigest = (hi: number, lo: number) => hi.toString(16).padStart(8, '0') + lo.toString(16).padStart(8, '0');

const latest = <Info>(list: readonly Connection<Info>[]): Connection<Info> =>
  list.reduce((best, c) => (c.since > best.since || (c.since === best.since && c.node === best.node && c.generation > best.generation) ? c : best));

export class HolderTable<Info = unknown> {
  #byDevice = new Map<string, Connection<Info>[]>();
  #digests = new Map<string, [number, number]>();

  #toggle(node: string, deviceId: string, generation: number): void {
    const [a, b] = connectionHash(deviceId, generation);
    const [hi, lo] = this.#digests.get(node) ?? [0, 0];
    this.#digests.set(node, [(hi ^ a) >>> 0, (lo ^ b) >>> 0]);
  }

  #remove(deviceId: string, list: Connection<Info>[], i: number): void {
    const [gone] = list.splice(i, 1);
    this.#toggle(gone!.node, deviceId, gone!.generation);
    if (list.length === 0) this.#byDevice.delete(deviceId);
  }

  /** A connection began (or a snapshot repeats it). */
  online(deviceId: string, c: Connection<Info>): PresenceOutcome<Info> {
    let list = this.#byDevice.get(deviceId);
    const before = list && latest(list);
    if (list) {
      const same = list.findIndex((h) => h.node === c.node);
      if (same !== -1) {
        const held = list[same]!;
        // An earlier generation on the same node is a connection that node already replaced.
        if (held.generation > c.generation) return { kind: 'unchanged' };
        if (held.generation === c.generation) return { kind: 'unchanged' };
        this.#remove(deviceId, list, same);
        list = this.#byDevice.get(deviceId);
      }
    }
    if (!list) this.#byDevice.set(deviceId, (list = []));
    list.push(c);
    this.#toggle(c.node, deviceId, c.generation);
    const now = latest(list);
    return now !== before ? { kind: 'online', current: now } : { kind: 'unchanged' };
  }

  /** A connection ended. */
  offline(deviceId: string, c: Omit<Connection, 'since' | 'info'>): PresenceOutcome<Info> {
    const list = this.#byDevice.get(deviceId);
    const i = list?.findIndex((h) => h.node === c.node && h.generation === c.generation) ?? -1;
    if (!list || i === -1) return { kind: 'unchanged' };
    const before = latest(list);
    this.#remove(deviceId, list, i);
    if (list.length === 0) return { kind: 'offline' };
    const now = latest(list);
    return now !== before ? { kind: 'online', current: now } : { kind: 'unchanged' };
  }

  /**
   * Forgets the connections of `node` but those of the devices in `keep` (a snapshot's end, or
   * the node's loss); returns what that did to each device it touched.
   */
  dropNode(node: string, keep: ReadonlySet<string> = new Set()): Map<string, PresenceOutcome<Info>> {
    const outcomes = new Map<string, PresenceOutcome<Info>>();
    for (const [deviceId, list] of [...this.#byDevice]) {
      if (keep.has(deviceId)) continue;
      const i = list.findIndex((h) => h.node === node);
      if (i === -1) continue;
      const outcome = this.offline(deviceId, list[i]!);
      if (outcome.kind !== 'unchanged') outcomes.set(deviceId, outcome);
    }
    if (keep.size === 0) this.#digests.delete(node);
    return outcomes;
  }

  /** The connection a device is reached through: its latest. */
  holder(deviceId: string): Connection<Info> | undefined {
    const list = this.#byDevice.get(deviceId);
    return list && latest(list);
  }

  /** Whether `node` reported a connection of the device that it has not reported ended. */
  heldBy(deviceId: string, node: string): boolean {
    return this.#byDevice.get(deviceId)?.some((c) => c.node === node) ?? false;
  }

  /** The digest of the connections `node` reported and has not ended (`digestOf` over them). */
  digest(node: string): string {
    const [hi, lo] = this.#digests.get(node) ?? [0, 0];
    return formatDigest(hi, lo);
  }

  /** Devices online (with at least one connection). */
  get size(): number {
    return this.#byDevice.size;
  }
}
