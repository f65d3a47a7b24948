/**
 * @module The nodes the control node hears from (docs/cluster.md, presence): one run per
 * node name at a time, known by the name its subjects carry (which the bus's permissions prove).
 * A message from another run of the name starts that run and ends the earlier one, which is then
 * over for good: a late message of an ended run (still on its way when the new one spoke) is
 * dropped, never taken for a newer run. A run that names another node is dropped, and so is a
 * node beyond MAX_NODES.
 */
import { isRunOf } from '../shared/protocol/cluster';
import type { Counter } from '../shared/metrics';
import type { Logger } from '../shared/log';

/** A node the control node hears from: its current run, where it is reached, when it was last heard. */
export interface NodeState {
  run: string;
  url: string | undefined;
  lastHeard: number;
  agents: number;
  /** Heartbeats in a row whose digest differed from the connections held for the run. */
  mismatches: number;
  /** A presence snapshot being received (one at a time per node). */
  snapshot?: { id: string; devices: Set<string> };
}

/** Node names the control node keeps at once (with credentials, one per credentials file). */
const MAX_NODES = 1_000;
/** Ended runs remembered per node name, so their late messages are recognised. */
const ENDED_RUNS = 8;

export interface NodeTableDeps {
  log: Logger;
  /** Counts messages from nodes that were dropped. */
  refused: Counter;
  /** The run `run` of node `name` ended because another run of it spoke. */
  onRunReplaced(name: string, run: string, by: string): void;
}

export function createNodeTable(deps: NodeTableDeps) {
  const { log, refused } = deps;
  const nodes = new Map<string, NodeState>();
  /** Runs that ended, by node name (the most recent few). */
  const ended = new Map<string, string[]>();
  /** The run of a node that went silent, by node name: ended once another run of it speaks. */
  const lastRuns = new Map<string, string>();
  const mono = () => performance.now();

  function end(name: string, run: string): void {
    const list = ended.get(name) ?? [];
    list.push(run);
    ended.set(name, list.slice(-ENDED_RUNS));
  }

  return {
    /**
     * The state of node `name` as of a message from its run `run`; undefined when the message must be
     * dropped (a run that is not the node's, or too many nodes). A new run replaces the old one.
     */
    nodeFor(name: string, run: string): NodeState | undefined {
      if (!isRunOf(name, run)) {
        refused.inc();
        log.warn('dropped a message from a node that named another node', { node: name, node_id: run.slice(0, 64) });
        return undefined;
      }
      let node = nodes.get(name);
      if (node?.run === run) return node;
      if (ended.get(name)?.includes(run)) {
        log.debug('dropped a late message of a run that ended', { node: name, node_id: run });
        return undefined;
      }
      if (!node && nodes.size >= MAX_NODES) {
        refused.inc();
        log.warn('too many nodes; dropped a message from one more', { node: name, max: MAX_NODES });
        return undefined;
      }
      if (node) {
        end(name, node.run);
        deps.onRunReplaced(name, node.run, run);
      }
      const silentRun = lastRuns.get(name);
      if (silentRun !== undefined && silentRun !== run) end(name, silentRun);
      lastRuns.delete(name);
      node = { run, url: undefined, lastHeard: mono(), agents: 0, mismatches: 0 };
      nodes.set(name, node);
      return node;
    },

    /** The current run of node `name`, if any. */
    runOf: (name: string): string | undefined => nodes.get(name)?.run,
    /** The public URL of the node `name` (from its heartbeats), when it is alive. */
    urlOf: (name: string): string | undefined => nodes.get(name)?.url,

    /** Removes and returns the nodes not heard from for longer than `deadline`. */
    takeSilent(deadline: number): Array<[string, NodeState]> {
      const t = mono();
      const silent = [...nodes].filter(([, n]) => t - n.lastHeard > deadline);
      for (const [name, n] of silent) {
        nodes.delete(name);
        // Silent, not ended: the same run may come back (it was cut off); a new one ends it.
        lastRuns.set(name, n.run);
      }
      return silent;
    },

    /** Every node counts as heard now (the bus was away: they could not speak). */
    heardAll(): void {
      const t = mono();
      for (const n of nodes.values()) n.lastHeard = t;
    },

    get size(): number {
      return nodes.size;
    },
  };
}
export type NodeTable = ReturnType<typeof createNodeTable>;
