/**
 * @module Webhooks and their deliveries (docs/access.md, webhooks): subscriptions an administrator
 * creates and deletes (marked, so their deliveries log stays), and the sender's side of the outbox
 * (./webhook-outbox.ts): claiming due deliveries under a lease, which a conditional update makes
 * safe across peers, and recording each attempt's outcome only while that lease is still held.
 */
import type { Executor, Row } from './schema';
import { affected, atomically } from './schema';
import { newWebhookId } from './webhook-outbox';

export type WebhookFormat = 'json' | 'slack';
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookRow {
  webhook_id: string;
  url: string;
  events: string[];
  format: WebhookFormat;
  created_by: string;
  created_at: string;
  deleted_at: string | null;
}

export interface DeliveryRow {
  delivery_id: string;
  webhook_id: string;
  event: string;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  next_attempt_at: string | null;
  delivered_at: string | null;
}

/** A delivery a sender holds until `lease`: what it POSTs, where, and what it signs with. */
export interface ClaimedDelivery {
  delivery_id: string;
  event: string;
  body: string;
  url: string;
  secret: string;
  attempts: number;
  created_at: string;
  /** The lease's end, as written: the outcome is recorded only while it is still this. */
  lease: string;
}

/** What one attempt came to: delivered, to be tried again at `next_attempt_at`, failed for good, or not made (released). */
export type AttemptOutcome =
  | { kind: 'delivered'; status_code: number; at: string }
  | { kind: 'retry'; status_code: number | null; error: string; next_attempt_at: string }
  | { kind: 'failed'; status_code: number | null; error: string }
  | { kind: 'released' };

const HOOK_COLUMNS = ['webhook_id', 'url', 'events', 'format', 'created_by', 'created_at', 'deleted_at'] as const;
const DELIVERY_COLUMNS = [
  'delivery_id',
  'webhook_id',
  'event',
  'status',
  'attempts',
  'last_status_code',
  'last_error',
  'created_at',
  'next_attempt_at',
  'delivered_at',
] as const;

type HookSelect = Omit<Row<'webhooks'>, 'secret'>;
const hookRow = (r: HookSelect): WebhookRow => ({ ...r, events: JSON.parse(r.events) as string[], format: r.format as WebhookFormat });

export function createWebhookRepo(db: Executor) {
  return {
    async create(input: { url: string; events: string[]; secret: string; format: WebhookFormat; created_by: string; at: string }): Promise<WebhookRow> {
      const row = {
        webhook_id: newWebhookId(),
        url: input.url,
        events: JSON.stringify(input.events),
        secret: input.secret,
        format: input.format,
        created_by: input.created_by,
        created_at: input.at,
        deleted_at: null,
      };
      await db.insertInto('webhooks').values(row).execute();
      return hookRow(row);
    },

    /** The live webhooks, newest first. */
    async list(): Promise<WebhookRow[]> {
      const rows = await db
        .selectFrom('webhooks')
        .select(HOOK_COLUMNS)
        .where('deleted_at', 'is', null)
        .orderBy('created_at', 'desc')
        .orderBy('webhook_id')
        .execute();
      return rows.map(hookRow);
    },

    /** A webhook, deleted or not. */
    async get(webhookId: string): Promise<WebhookRow | undefined> {
      const row = await db.selectFrom('webhooks').select(HOOK_COLUMNS).where('webhook_id', '=', webhookId).executeTakeFirst();
      return row && hookRow(row);
    },

    /** Deletes delivered and failed deliveries created before `before` (housekeeping: the log is kept, not for ever); how many. */
    async pruneEnded(before: string): Promise<number> {
      const r = await db.deleteFrom('webhook_deliveries').where('status', 'in', ['delivered', 'failed']).where('created_at', '<', before).executeTakeFirst();
      return affected(r);
    },

    /** Marks a live webhook deleted and ends its pending deliveries `failed`; false when there is no live one. */
    remove(webhookId: string, at: string): Promise<boolean> {
      return atomically(db, async (tx) => {
        const marked = await tx
          .updateTable('webhooks')
          .set({ deleted_at: at })
          .where('webhook_id', '=', webhookId)
          .where('deleted_at', 'is', null)
          .executeTakeFirst();
        if (affected(marked) === 0) return false;
        await tx
          .updateTable('webhook_deliveries')
          .set({ status: 'failed', last_error: 'webhook deleted', next_attempt_at: null, claimed_until: null })
          .where('webhook_id', '=', webhookId)
          .where('status', '=', 'pending')
          .execute();
        return true;
      });
    },

    /** A page of a webhook's deliveries, newest first. */
    async deliveries(
      webhookId: string,
      q: { status?: DeliveryStatus | undefined; limit: number; offset: number },
    ): Promise<{ items: DeliveryRow[]; total: number }> {
      let where = db.selectFrom('webhook_deliveries').where('webhook_id', '=', webhookId);
      if (q.status !== undefined) where = where.where('status', '=', q.status);
      const [rows, count] = await Promise.all([
        where.select(DELIVERY_COLUMNS).orderBy('created_at', 'desc').orderBy('delivery_id', 'desc').limit(q.limit).offset(q.offset).execute(),
        where.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
      ]);
      const items = rows.map((r) => ({
        ...r,
        status: r.status as DeliveryStatus,
        attempts: Number(r.attempts),
        last_status_code: r.last_status_code === null ? null : Number(r.last_status_code),
      }));
      return { items, total: Number(count.n) };
    },

    /**
     * Leases up to `limit` deliveries that are due at `now` and not leased by anyone (or whose
     * lease ran out: its sender died) until `lease`. The UPDATE re-checks the lease, so of two
     * peers claiming at once each delivery goes to one of them.
     */
    async claimDue(now: string, lease: string, limit: number): Promise<ClaimedDelivery[]> {
      const due = await db
        .selectFrom('webhook_deliveries')
        .select('delivery_id')
        .where('status', '=', 'pending')
        .where('next_attempt_at', '<=', now)
        .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
        .orderBy('next_attempt_at')
        .limit(limit)
        .execute();
      if (due.length === 0) return [];
      const claimed = await db
        .updateTable('webhook_deliveries')
        .set({ claimed_until: lease })
        .where(
          'delivery_id',
          'in',
          due.map((d) => d.delivery_id),
        )
        .where('status', '=', 'pending')
        .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
        .returning('delivery_id')
        .execute();
      if (claimed.length === 0) return [];
      const rows = await db
        .selectFrom('webhook_deliveries as d')
        .innerJoin('webhooks as w', 'w.webhook_id', 'd.webhook_id')
        .select(['d.delivery_id', 'd.event', 'd.body', 'd.attempts', 'd.created_at', 'w.url', 'w.secret'])
        .where(
          'd.delivery_id',
          'in',
          claimed.map((c) => c.delivery_id),
        )
        .execute();
      return rows.map((r) => ({ ...r, attempts: Number(r.attempts), lease }));
    },

    /** Records an attempt of a delivery claimed with `lease`; false when the lease was lost (another sender has it). */
    async recordAttempt(deliveryId: string, lease: string, outcome: AttemptOutcome): Promise<boolean> {
      const change =
        outcome.kind === 'released'
          ? { claimed_until: null }
          : outcome.kind === 'delivered'
            ? { status: 'delivered', last_status_code: outcome.status_code, last_error: null, delivered_at: outcome.at, next_attempt_at: null }
            : outcome.kind === 'retry'
              ? { last_status_code: outcome.status_code, last_error: outcome.error, next_attempt_at: outcome.next_attempt_at }
              : { status: 'failed', last_status_code: outcome.status_code, last_error: outcome.error, next_attempt_at: null };
      const result = await db
        .updateTable('webhook_deliveries')
        .set((eb) => ({ ...change, claimed_until: null, ...(outcome.kind !== 'released' && { attempts: eb('attempts', '+', 1) }) }))
        .where('delivery_id', '=', deliveryId)
        .where('status', '=', 'pending')
        .where('claimed_until', '=', lease)
        .executeTakeFirst();
      return affected(result) > 0;
    },

    /** Deliveries waiting for a (next) attempt, for the metrics. */
    async pendingCount(): Promise<number> {
      const r = await db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('status', '=', 'pending')
        .executeTakeFirstOrThrow();
      return Number(r.n);
    },
  };
}
export type WebhookRepo = ReturnType<typeof createWebhookRepo>;
