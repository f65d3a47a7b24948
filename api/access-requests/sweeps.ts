/**
 * @module Access requests' changes by time (CONTRACT 10.3): a request pending past its
 * `expires_at` ends `expired` (audited as `system`, published), a grant past its `ends_at` ends
 * `ended` (no event: the contract names none; its sessions close by their own expiry with
 * `access_expired`). Every SWEEP_MS on the housekeeping's leader; each change is one conditional
 * UPDATE, so a leader that lost its lock a moment ago and sweeps once more does no harm. Time
 * decides by itself meanwhile: a grant is live only between its `starts_at` and `ends_at`, and
 * a pending request past its `expires_at` can no longer be reviewed or canceled.
 */
import type { Logger } from '../../shared/log';
import type { EventHub } from '../events/hub';
import { SYSTEM_ACTOR } from '../identity/identity';
import type { Store } from '../store/index';
import { auditChange, publishChange } from './requests';

/** How often the leader looks. */
export const SWEEP_MS = 2000;

export interface AccessSweepsDeps {
  store: Store;
  events: EventHub;
  log: Logger;
  now: () => number;
  /** Whether this process leads the housekeeping (SQLite: always). */
  leads: () => boolean;
}

export function createAccessSweeps({ store, events, log, now, leads }: AccessSweepsDeps) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;

  async function sweep(): Promise<void> {
    if (!leads()) return;
    const at = new Date(now()).toISOString();
    const expired = await store.transaction(async (tx) => {
      const rows = await tx.access.expirePending(at);
      for (const r of rows) await auditChange(tx, 'access_request.expired', r, SYSTEM_ACTOR, at);
      return rows;
    });
    for (const r of expired) publishChange(events, 'access_request.expired', r, SYSTEM_ACTOR, at);
    if (expired.length > 0) log.info('access requests expired unreviewed', { requests: expired.map((r) => r.request_id) });
    const ended = await store.access.endGrants(at);
    if (ended > 0) log.info('access grants ended', { count: ended });
  }

  function tick(): void {
    running ??= sweep()
      .catch((err: Error) => log.warn('access request sweep failed; trying again', { err: err.message }))
      .finally(() => (running = undefined));
  }

  return {
    start(): void {
      tick();
      timer = setInterval(tick, SWEEP_MS);
      timer.unref();
    },
    /** Stops; resolves once a sweep in progress has ended. */
    async stop(): Promise<void> {
      clearInterval(timer);
      timer = undefined;
      await running;
    },
    /** One sweep now (tests). */
    async once(): Promise<void> {
      tick();
      await running;
    },
  };
}
export type AccessSweeps = ReturnType<typeof createAccessSweeps>;
