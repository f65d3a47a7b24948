/**
 * @module Access policies and requests (CONTRACT 10.3; docs/access.md). Policies are marked
 * deleted, never removed; requests are never deleted. Every change of a request's status is one
 * conditional UPDATE guarded by the status it leaves (and by time where time decides), so of two
 * reviewers, peers or sweeps acting at once exactly one gets the row, and it gets it as changed.
 */
import type { ExpressionBuilder, Selectable } from 'kysely';
import type { AccessPolicy, AccessRequest, AccessRequestStatus } from '../../shared/api/access';
import type { SessionProtocol } from '../../shared/protocol/control-channel';
import type { AccessPoliciesTable, AccessRequestsTable } from './schema-access';
import { affected, type Executor, type Schema } from './schema';

const toPolicy = (row: Selectable<AccessPoliciesTable>): AccessPolicy => ({
  policy_id: row.policy_id,
  name: row.name,
  match: { labels: JSON.parse(row.labels) as Record<string, string> },
  protocols: JSON.parse(row.protocols) as SessionProtocol[],
  max_duration_seconds: Number(row.max_duration_seconds),
  created_by: row.created_by,
  created_at: row.created_at,
});

const toRequest = (row: Selectable<AccessRequestsTable>): AccessRequest => ({
  ...row,
  status: row.status as AccessRequestStatus,
  protocols: JSON.parse(row.protocols) as SessionProtocol[],
  duration_seconds: Number(row.duration_seconds),
});
const toRequestOrUndefined = (row: Selectable<AccessRequestsTable> | undefined) => (row ? toRequest(row) : undefined);

/** A request as created: pending. */
export type NewRequest = Pick<
  AccessRequest,
  'request_id' | 'requester' | 'device_id' | 'protocols' | 'reason' | 'duration_seconds' | 'created_at' | 'expires_at'
>;

export interface RequestQuery {
  status?: AccessRequestStatus | undefined;
  device_id?: string | undefined;
  requester?: string | undefined;
  /** Only requests created strictly after this ISO timestamp. */
  since?: string | undefined;
  limit: number;
  offset: number;
}

function matching(q: Omit<RequestQuery, 'limit' | 'offset'>) {
  return (eb: ExpressionBuilder<Schema, 'access_requests'>) => {
    const terms = [];
    if (q.status !== undefined) terms.push(eb('status', '=', q.status));
    if (q.device_id !== undefined) terms.push(eb('device_id', '=', q.device_id));
    if (q.requester !== undefined) terms.push(eb('requester', '=', q.requester));
    if (q.since !== undefined) terms.push(eb('created_at', '>', q.since));
    return eb.and(terms);
  };
}

/** Whether every label the policy names has the same value on the device. */
const policyMatches = (policy: AccessPolicy, labels: Readonly<Record<string, string>>): boolean =>
  Object.entries(policy.match.labels).every(([k, v]) => labels[k] === v);

export function createAccessRepo(db: Executor) {
  const live = () => db.selectFrom('access_policies').where('deleted_at', 'is', null);
  /**
   * Sets `changes` on the request while its status is `from` and `until`'s column is still after
   * `at`; the row as changed, or undefined.
   */
  const transition = async (
    requestId: string,
    from: AccessRequestStatus,
    changes: Partial<Omit<Selectable<AccessRequestsTable>, 'request_id'>>,
    until: { column: 'expires_at' | 'ends_at'; at: string },
  ): Promise<AccessRequest | undefined> => {
    const update = db
      .updateTable('access_requests')
      .set(changes)
      .where('request_id', '=', requestId)
      .where('status', '=', from)
      .where(until.column, '>', until.at);
    return toRequestOrUndefined(await update.returningAll().executeTakeFirst());
  };

  const livePolicies = async (): Promise<AccessPolicy[]> => (await live().selectAll().orderBy('created_at').orderBy('policy_id').execute()).map(toPolicy);

  return {
    async createPolicy(p: AccessPolicy): Promise<void> {
      await db
        .insertInto('access_policies')
        .values({
          policy_id: p.policy_id,
          name: p.name,
          labels: JSON.stringify(p.match.labels),
          protocols: JSON.stringify(p.protocols),
          max_duration_seconds: p.max_duration_seconds,
          created_by: p.created_by,
          created_at: p.created_at,
          deleted_at: null,
        })
        .execute();
    },
    /** Live policies, oldest first. */
    async listPolicies(limit: number, offset: number): Promise<{ items: AccessPolicy[]; total: number }> {
      const [items, count] = await Promise.all([
        live().selectAll().orderBy('created_at').orderBy('policy_id').limit(limit).offset(offset).execute(),
        live()
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow(),
      ]);
      return { items: items.map(toPolicy), total: Number(count.n) };
    },
    /** Every live policy: few, read whole to match a device's labels. */
    livePolicies,
    /** Live policies whose labels all match `labels`. */
    policiesFor: async (labels: Readonly<Record<string, string>>): Promise<AccessPolicy[]> => (await livePolicies()).filter((p) => policyMatches(p, labels)),
    /** Marks a live policy deleted; false when there is none. */
    async deletePolicy(policyId: string, at: string): Promise<boolean> {
      const r = await db
        .updateTable('access_policies')
        .set({ deleted_at: at })
        .where('policy_id', '=', policyId)
        .where('deleted_at', 'is', null)
        .executeTakeFirst();
      return affected(r) > 0;
    },

    async createRequest(r: NewRequest): Promise<AccessRequest> {
      const row = await db
        .insertInto('access_requests')
        .values({ ...r, protocols: JSON.stringify(r.protocols), status: 'pending' })
        .returningAll()
        .executeTakeFirstOrThrow();
      return toRequest(row);
    },
    get: async (requestId: string): Promise<AccessRequest | undefined> =>
      toRequestOrUndefined(await db.selectFrom('access_requests').selectAll().where('request_id', '=', requestId).executeTakeFirst()),
    /** Requests, newest first. */
    async list(q: RequestQuery): Promise<{ items: AccessRequest[]; total: number }> {
      const where = matching(q);
      const [items, count] = await Promise.all([
        db
          .selectFrom('access_requests')
          .selectAll()
          .where(where)
          .orderBy('created_at', 'desc')
          .orderBy('request_id', 'desc')
          .limit(q.limit)
          .offset(q.offset)
          .execute(),
        db
          .selectFrom('access_requests')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where(where)
          .executeTakeFirstOrThrow(),
      ]);
      return { items: items.map(toRequest), total: Number(count.n) };
    },

    /** pending → approved, while it has not expired; the grant runs from `at` for its duration. */
    approve: (requestId: string, by: string, reason: string, at: string, endsAt: string) =>
      transition(
        requestId,
        'pending',
        { status: 'approved', reviewed_by: by, review_reason: reason, reviewed_at: at, starts_at: at, ends_at: endsAt },
        {
          column: 'expires_at',
          at,
        },
      ),
    /** pending → denied, while it has not expired. */
    deny: (requestId: string, by: string, reason: string, at: string) =>
      transition(requestId, 'pending', { status: 'denied', reviewed_by: by, review_reason: reason, reviewed_at: at }, { column: 'expires_at', at }),
    /** pending → canceled (its requester), while it has not expired. */
    cancel: (requestId: string, at: string) => transition(requestId, 'pending', { status: 'canceled' }, { column: 'expires_at', at }),
    /** approved → revoked, while the grant has not ended. */
    revoke: (requestId: string, by: string, reason: string | null, at: string) =>
      transition(requestId, 'approved', { status: 'revoked', revoked_by: by, revoke_reason: reason, revoked_at: at }, { column: 'ends_at', at }),

    /** pending → expired for every request pending past its `expires_at`; the rows as changed. */
    expirePending: async (at: string): Promise<AccessRequest[]> =>
      (
        await db
          .updateTable('access_requests')
          .set({ status: 'expired' })
          .where('status', '=', 'pending')
          .where('expires_at', '<=', at)
          .returningAll()
          .execute()
      ).map(toRequest),
    /** approved → ended for every grant past its `ends_at`; how many. */
    async endGrants(at: string): Promise<number> {
      const r = await db.updateTable('access_requests').set({ status: 'ended' }).where('status', '=', 'approved').where('ends_at', '<=', at).executeTakeFirst();
      return affected(r);
    },

    /** The caller's grant covering the device and protocol at `at` (the one ending last), if any. */
    async liveGrant(requester: string, deviceId: string, protocol: SessionProtocol, at: string): Promise<AccessRequest | undefined> {
      const rows = await db
        .selectFrom('access_requests')
        .selectAll()
        .where('device_id', '=', deviceId)
        .where('status', '=', 'approved')
        .where('requester', '=', requester)
        .where('starts_at', '<=', at)
        .where('ends_at', '>', at)
        .orderBy('ends_at', 'desc')
        .execute();
      return rows.map(toRequest).find((r) => r.protocols.includes(protocol));
    },
  };
}
export type AccessRepo = ReturnType<typeof createAccessRepo>;
