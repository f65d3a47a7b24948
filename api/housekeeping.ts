/**
 * @module What a running server does on its own besides serving (docs/peers.md): it says every
 * BEAT_MS that it is alive (the `peers` table), and, while it leads (`store/leadership.ts`: on
 * SQLite always, on PostgreSQL the one peer holding the housekeeping lock), it clears the presence
 * of agents held by peers that went silent (they died: their agents reconnect elsewhere, with a new
 * presence generation), forgets those peers, sweeps old rate-limit rows,
 * deletes blob uploads left unfinished for a day and webhook deliveries that ended 30 days ago,
 * and ends access requests and grants whose time is up (`access-requests/sweeps.ts`). Every step is a
 * conditional write, so a leader that lost its lock a moment ago and runs once more does no harm.
 */
import type { Logger } from '../shared/log';
import { sweepAccess } from './access-requests/sweeps';
import type { EventHub } from './events/hub';
import type { Leadership } from './store/leadership';
import { RATE_LIMIT_WINDOW_MS } from './http/rate-limit';
import type { Store } from './store/index';
import { createWebhookRepo } from './store/webhooks';

/** How often a server says it is alive, and the leader looks. */
export const BEAT_MS = 2000;
/** A peer silent this long is gone. */
export const PEER_SILENT_MS = 10_000;
/** How long the deliveries log keeps a delivery that ended (delivered or failed). */
export const DELIVERY_LOG_MS = 30 * 24 * 3600_000;
/** A blob upload unfinished this long was cut off (its server died mid-upload): its chunks are deleted. */
export const UNFINISHED_BLOB_MS = 24 * 3600_000;

export interface ThisNode {
  /** This run's id (`server-` or `peer-NAME-` and 8 random characters). */
  run: string;
  /** The URL clients reach this node at. */
  url: string;
}

export interface HousekeepingDeps {
  store: Store;
  leadership: Leadership;
  node: ThisNode;
  log: Logger;
  now: () => number;
  /** Agents the leader found held by a gone peer, now offline (for the event streams). */
  agentsLost(deviceIds: readonly string[], at: string): void;
  /** Where access requests that expire are published. */
  events: EventHub;
}

export function createHousekeeping(deps: HousekeepingDeps) {
  const { store, leadership, node, log, now } = deps;
  const startedAt = new Date(now()).toISOString();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function lead(t: number): Promise<void> {
    const silentSince = t - PEER_SILENT_MS;
    const gone = await store.peers.removeSilent(silentSince);
    if (gone.length > 0) log.warn('peers went silent; their agents are offline until they reconnect', { peers: gone });
    const live = (await store.peers.live(silentSince)).map((p) => p.node);
    const at = new Date(t).toISOString();
    const lost = await store.devices.releaseUnheld(live, at);
    if (lost.length > 0) deps.agentsLost(lost, at);
    await store.rateLimits.expire(t - RATE_LIMIT_WINDOW_MS);
    const cutOff = await store.blobs.deleteUnfinished(new Date(t - UNFINISHED_BLOB_MS).toISOString());
    if (cutOff > 0) log.info('deleted blob uploads a server left unfinished', { blobs: cutOff });
    await createWebhookRepo(store.db).pruneEnded(new Date(t - DELIVERY_LOG_MS).toISOString());
    await sweepAccess({ store, events: deps.events, log: log.child({ component: 'access' }) }, t);
  }

  async function beat(): Promise<void> {
    const t = now();
    await store.peers.beat(node.run, node.url, startedAt, t);
    if (leadership.leads()) await lead(t);
  }

  function tick(): void {
    running ??= beat()
      .catch((err: Error) => log.warn('housekeeping failed; trying again', { err: err.message }))
      .finally(() => (running = undefined));
  }

  return {
    start(): void {
      tick();
      timer = setInterval(tick, BEAT_MS);
      timer.unref();
    },
    /** Stops, and says this node is gone (its agents' presence is cleared by whoever leads next). */
    async stop(): Promise<void> {
      clearInterval(timer);
      await running;
      await store.peers.remove(node.run).catch(() => {});
      await leadership.close();
    },
    /** One round now (tests). */
    async once(): Promise<void> {
      tick();
      await running;
    },
  };
}
export type Housekeeping = ReturnType<typeof createHousekeeping>;
