/**
 * @module The control node's presence writes (docs/cluster.md, presence): what the changes of a
 * device's connections amount to (online through its latest one, or offline), batched and written
 * to the database through the API, the latest state of each device only. Batches are written one
 * at a time, in order, so a device's later state is never overwritten by an earlier one.
 */
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { PresenceOutcome } from './holders';

/** A presence change as the API records it. */
export type PresenceWrite =
  | { kind: 'online'; deviceId: string; agentVersion: string | null; forwardAllow: readonly string[] | null; at: string; url?: string | undefined }
  | { kind: 'offline'; deviceId: string; at: string };

export interface PresenceApi {
  apply(changes: readonly PresenceWrite[]): Promise<void>;
  onlineIds(): Promise<string[]>;
  seen(lastSeen: Map<string, number>): Promise<void>;
}

/** What a node said about an agent, written to its device when its connection is the current one. */
export interface AgentInfo {
  agentVersion: string | null;
  forwardAllow: string[] | null;
  /** The URL of the node that holds it (where its streams are joined); none: the control node's own. */
  url?: string | undefined;
}

const PRESENCE_FLUSH_MS = 50;

const iso = (ms: number) => new Date(ms).toISOString();

export function createPresenceWrites(api: PresenceApi, log: Logger, metrics: Metrics) {
  let writes = new Map<string, PresenceWrite>();
  let writeTimer: NodeJS.Timeout | undefined;
  const presenceWrites = metrics.counter('tether_cluster_presence_writes_total', 'Agent presence changes the control node wrote, by kind.');
  const onlineWrites = presenceWrites.series({ kind: 'online' });
  const offlineWrites = presenceWrites.series({ kind: 'offline' });

  /** The batches being written: each starts once the one before it is done. */
  let writing: Promise<void> = Promise.resolve();

  async function apply(batch: PresenceWrite[]): Promise<void> {
    try {
      await api.apply(batch);
      for (const w of batch) (w.kind === 'online' ? onlineWrites : offlineWrites).inc();
    } catch (err) {
      log.error('could not write agent presence', { err: (err as Error).message, changes: batch.length });
    }
  }

  /** Writes what waits, after the batches before it; resolves once they are all done (never rejects: failures are logged). */
  function flush(): Promise<void> {
    clearTimeout(writeTimer);
    writeTimer = undefined;
    if (writes.size > 0) {
      const batch = [...writes.values()];
      writes = new Map();
      writing = writing.then(() => apply(batch));
    }
    return writing;
  }

  function write(change: PresenceWrite): void {
    writes.set(change.deviceId, change); // the latest state of a device is what counts
    writeTimer ??= setTimeout(() => void flush(), PRESENCE_FLUSH_MS);
  }

  return {
    /** Writes what a change of a device's connections amounts to: online through its latest one, or offline. */
    record(deviceId: string, outcome: PresenceOutcome<AgentInfo>, at: number): void {
      if (outcome.kind === 'offline') write({ kind: 'offline', deviceId, at: iso(at) });
      else if (outcome.kind === 'online') {
        const { info, since } = outcome.current;
        write({ kind: 'online', deviceId, agentVersion: info!.agentVersion, forwardAllow: info!.forwardAllow, at: iso(since), url: info!.url });
      }
    },
    /** The device is offline (found so without a connection to end). */
    offline: (deviceId: string, at: number) => write({ kind: 'offline', deviceId, at: iso(at) }),
    /** Whether an online write of the device waits. */
    onlinePending: (deviceId: string): boolean => writes.get(deviceId)?.kind === 'online',
    flush,
  };
}
export type PresenceWrites = ReturnType<typeof createPresenceWrites>;
