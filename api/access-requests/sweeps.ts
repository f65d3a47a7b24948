/**
 * @module Access requests' changes by time (CONTRACT 10.3): a request pending past its
 * `expires_at` ends `expired` (audited as `system`, published), a grant past its `ends_at` ends
 * `ended` (no event: the contract names none; its sessions close by their own expiry with
 * `access_expired`). Every beat of the housekeeping's leader (BEAT_MS); each change is one conditional
 * UPDATE, so a leader that lost its lock a moment ago and sweeps once more does no harm. Time
 * decides by itself meanwhile: a grant is live only between its `starts_at` and `ends_at`, and
 * a pending request past its `expires_at` can no longer be reviewed or canceled.
 */
import type { Logger } from '../../shared/log';
import type { EventHub } from '../events/hub';
import { SYSTEM_ACTOR } from '../identity/identity';
import type { Store } from '../store/index';
import { auditChange, publishChange } from './requests';

export interface AccessSweepDeps {
  store: Store;
  events: EventHub;
  log: Logger;
}

/** One sweep at time `t` (ms), by the housekeeping's leader (`../housekeeping.ts`, every beat). */
export async function sweepAccess({ store, events, log }: AccessSweepDeps, t: number): Promise<void> {
  const at = new Date(t).toISOString();
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
