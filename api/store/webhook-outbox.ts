/**
 * @module The webhooks' durable outbox (docs/access.md, webhooks): every audit event appended, of
 * the remote-access audit (./audit.ts) and of the audit log (api/audit/recorder.ts), writes one
 * `webhook_deliveries` row per live webhook subscribed to it, on the executor of the transaction
 * that records the event, so a delivery exists exactly when its event does. The row holds the
 * exact bytes to POST (every retry sends the same body and the same signature); the sender
 * (api/webhooks/sender.ts) takes it from there, on any peer, after any restart.
 */
import { randomBase32 } from '../../shared/ids';
import type { Executor } from './schema';
import { slackText, type AccessRequestFacts } from './webhook-text';

/** One event as its audit listing shows it. */
export interface OutboxEvent {
  event: string;
  at: string;
  data: Record<string, unknown>;
}

export const newWebhookId = (): string => `wh_${randomBase32(20)}`;
export const newDeliveryId = (): string => `whd_${randomBase32(20)}`;

const wakers = new Set<() => void>();

/**
 * Calls `fn` after deliveries are enqueued in this process (the sender's cue to look at once
 * rather than at its next poll); returns the unsubscribe. It may run before the enqueuing
 * transaction commits: the sender looks again shortly after.
 */
export function onDeliveriesEnqueued(fn: () => void): () => void {
  wakers.add(fn);
  return () => wakers.delete(fn);
}

/** The listing's shape of a remote-access audit row as inserted: no `owner`, `targets` and the ids only where set. */
export function remoteAccessData(row: Record<string, unknown>): Record<string, unknown> {
  const { owner: _owner, targets, job_id, request_id, ...rest } = row;
  const parsed = typeof targets === 'string' ? (JSON.parse(targets) as unknown) : targets;
  return {
    ...rest,
    ...(parsed !== null && parsed !== undefined && { targets: parsed }),
    ...(job_id !== null && job_id !== undefined && { job_id }),
    ...(request_id !== null && request_id !== undefined && { request_id }),
  };
}

/** The request an access event concerns, for a Slack line that names it; undefined when it cannot be read. */
async function accessFacts(db: Executor, e: OutboxEvent): Promise<AccessRequestFacts | undefined> {
  const id = e.data.request_id;
  if (!e.event.startsWith('access_request.') || typeof id !== 'string') return undefined;
  const row = await db.selectFrom('access_requests').select(['requester', 'protocols', 'duration_seconds']).where('request_id', '=', id).executeTakeFirst();
  if (!row) return undefined;
  return { requester: row.requester, protocols: JSON.parse(row.protocols) as string[], duration_seconds: Number(row.duration_seconds) };
}

/**
 * Enqueues `e` for every live webhook subscribed to its event, through `db` (the transaction that
 * records the event); answers how many deliveries it wrote. With no webhook it is one query of a
 * table of a few rows: read in the transaction rather than cached, so a webhook created on any
 * peer gets the very next event.
 */
export async function enqueueDeliveries(db: Executor, e: OutboxEvent): Promise<number> {
  const hooks = (await db.selectFrom('webhooks').select(['webhook_id', 'events', 'format']).where('deleted_at', 'is', null).execute()).filter((h) =>
    (JSON.parse(h.events) as string[]).includes(e.event),
  );
  if (hooks.length === 0) return 0;
  const facts = hooks.some((h) => h.format === 'slack') ? await accessFacts(db, e) : undefined;
  const rows = hooks.map((h) => {
    const delivery_id = newDeliveryId();
    const base = { id: delivery_id, event: e.event, at: e.at, data: e.data };
    const body = JSON.stringify(h.format === 'slack' ? { text: slackText(e.event, e.data, facts), ...base } : base);
    return { delivery_id, webhook_id: h.webhook_id, event: e.event, body, status: 'pending', next_attempt_at: e.at, created_at: e.at };
  });
  await db.insertInto('webhook_deliveries').values(rows).execute();
  for (const wake of wakers) wake();
  return rows.length;
}
