/**
 * @module Recording audit events (docs/http-api.md, audit log). A change and its events commit
 * together: every caller writes them with `recordAudit` on the executor of the transaction that
 * makes the change (`audited` opens one with the identity repositories on it), so nothing is in
 * the log that did not happen and nothing happened that is not in it. Jobs and access requests
 * record their `job.*` and `access_request.*` events the same way.
 */
import type { Context } from 'koa';
import { newTraceId } from '../../shared/ids';
import type { AuditLogEventName, AuditOutcome, AuditTargetKind } from '../../shared/api/audit';
import { createAuditLogRepo, type NewAuditLogRow } from '../store/audit-log';
import { createDeviceRepo } from '../store/devices';
import type { Store } from '../store/index';
import { atomically, type Executor } from '../store/schema';
import { createTokenRepo } from '../store/tokens';
import { createUserRepo } from '../store/users';
import { enqueueDeliveries } from '../store/webhook-outbox';

/** Who caused an event and where the request came from. */
export interface AuditSource {
  /** A username, or `system` when the platform acted. */
  actor: string;
  trace_id: string;
  source_ip: string | null;
}

/** One event to record, at `at`, caused by `source`. */
export interface AuditRecord {
  event: AuditLogEventName;
  target: { kind: AuditTargetKind; id: string };
  /** What changed, small and never a secret. */
  details?: Record<string, unknown> | undefined;
  /** Default `success`. */
  outcome?: AuditOutcome | undefined;
}

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/;

/**
 * The source of a request: its actor (given, or the token's user), the trace id of a W3C
 * `traceparent` header (else a new one), and the peer's address (behind a reverse proxy: the proxy's).
 */
export function auditSourceOf(ctx: Context, actor?: string): AuditSource {
  const traced = TRACEPARENT.exec(ctx.get('traceparent'))?.[1];
  const ip = ctx.req.socket.remoteAddress;
  return {
    actor: actor ?? (ctx.state.principal as { username: string }).username,
    trace_id: traced !== undefined && !/^0+$/.test(traced) ? traced : newTraceId(),
    source_ip: ip === undefined ? null : ip.replace(/^::ffff:/, ''),
  };
}

/** The source of what the platform does by itself (first start, an offline command). */
export const systemSource = (): AuditSource => ({ actor: 'system', trace_id: newTraceId(), source_ip: null });

/** An event as recorded: what happened, who caused it, where from, and when. */
export interface AuditEvent extends AuditSource, AuditRecord {
  at: string;
}

/** Writes `events` on `db`: the transaction that made the change they record. */
export async function recordAudit(db: Executor, events: AuditEvent | readonly AuditEvent[]): Promise<void> {
  const rows: NewAuditLogRow[] = (Array.isArray(events) ? events : [events]).map((e: AuditEvent) => ({
    event: e.event,
    actor: e.actor,
    target: e.target,
    details: e.details ?? {},
    outcome: e.outcome ?? 'success',
    at: e.at,
    trace_id: e.trace_id,
    source_ip: e.source_ip,
  }));
  // The events and their webhook deliveries (api/store/webhook-outbox.ts) commit together; `data`
  // is each as the listing shows it, but for the row's `id`, `count` and `last_at`.
  await atomically(db, async (tx) => {
    await createAuditLogRepo(tx).append(rows);
    for (const { event, at, ...data } of rows) await enqueueDeliveries(tx, { event, at, data: { event, ...data, at } });
  });
}

/** `records` as events caused by `source` at `at`. */
export const eventsOf = (source: AuditSource, at: string, records: readonly AuditRecord[]): AuditEvent[] => records.map((r) => ({ ...source, at, ...r }));

/** The identity repositories of one transaction, and its executor for `recordAudit`. */
export interface AuditedRepos {
  db: Executor;
  users: ReturnType<typeof createUserRepo>;
  tokens: ReturnType<typeof createTokenRepo>;
  devices: ReturnType<typeof createDeviceRepo>;
}

/** Runs `fn` in one transaction whose change and audit events commit together, or neither does. */
export function audited<T>(store: Pick<Store, 'db'>, fn: (tx: AuditedRepos) => Promise<T>): Promise<T> {
  return atomically(store.db, (db) => fn({ db, users: createUserRepo(db), tokens: createTokenRepo(db), devices: createDeviceRepo(db) }));
}
