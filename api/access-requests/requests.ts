/**
 * @module Access requests' changes (CONTRACT 10.3; docs/access.md): asking, reviewing (an
 * administrator other than the requester), canceling (the requester) and revoking a grant, each
 * committed together with its audit event and then published (`access_request.*`) to the
 * requester and administrators. A revoke also closes at once the sessions opened under the grant
 * (`access_revoked`). Who may see which request is decided here too: its requester and administrators.
 */
import { type AccessEventName, type AccessRequest, type CreateRequestBody } from '../../shared/api/access';
import { newTraceId, randomBase32 } from '../../shared/ids';
import { requireAccess } from '../access';
import { ApiError, conflict, forbidden, notFound } from '../errors';
import type { EventHub } from '../events/hub';
import { hasRole, PROTOCOL_MIN_ROLE } from '../roles';
import type { Repos, Store } from '../store/index';
import type { Principal } from '../store/tokens';

export interface AccessRequestsDeps {
  store: Store;
  events: EventHub;
  now: () => number;
  /** How long a request stays pending (TETHER_ACCESS_REQUEST_TTL_SECONDS). */
  pendingTtlSeconds: number;
  /** Closes the open sessions of a revoked grant (api/sessions: `closeAllOfGrant`). */
  closeSessionsOf(requestId: string, actor: string): Promise<unknown>;
}

export const newRequestId = (): string => `areq_${randomBase32(20)}`;
export const isAdmin = (p: Principal): boolean => hasRole(p.role, 'administrator');

/** The audit reason each event records: the request's, the review's, the revoke's, or none. */
function reasonOf(event: AccessEventName, r: AccessRequest): string | null {
  if (event === 'access_request.created') return r.reason;
  if (event === 'access_request.approved' || event === 'access_request.denied') return r.review_reason;
  if (event === 'access_request.revoked') return r.revoke_reason;
  return null;
}

/** Appends the audit event of `r`'s change (in the transaction `tx`). */
export const auditChange = (tx: Repos, event: AccessEventName, r: AccessRequest, actor: string, at: string) =>
  tx.audit.appendAccess({
    event,
    request_id: r.request_id,
    device_id: r.device_id,
    actor,
    owner: r.requester,
    reason: reasonOf(event, r),
    trace_id: newTraceId(),
    at,
  });

/** Publishes `r`'s change on the event stream (after its commit). */
export const publishChange = (events: EventHub, event: AccessEventName, r: AccessRequest, actor: string, at: string) =>
  events.publish({ event, data: { request_id: r.request_id, device_id: r.device_id, requester: r.requester, status: r.status, actor, at } });

export function createAccessRequests(deps: AccessRequestsDeps) {
  const { store, events, now } = deps;
  const iso = (ms: number) => new Date(ms).toISOString();

  /** The request if the caller may see it (its requester, administrators), else 404. */
  async function visible(p: Principal, requestId: string): Promise<AccessRequest> {
    const r = await store.access.get(requestId);
    if (!r || !(isAdmin(p) || r.requester === p.username)) throw notFound(`no access request ${requestId}`);
    return r;
  }

  /** Commits `apply` with its audit event and publishes it; `refused` (409) when the change did not apply. */
  async function change(
    event: AccessEventName,
    actor: string,
    at: string,
    apply: (tx: Repos) => Promise<AccessRequest | undefined>,
    refused?: () => Promise<Error>,
  ): Promise<AccessRequest> {
    const changed = await store.transaction(async (tx) => {
      const r = await apply(tx);
      if (r) await auditChange(tx, event, r, actor, at);
      return r;
    });
    if (!changed) throw (await refused?.()) ?? new Error(`${event}: nothing changed`);
    publishChange(events, event, changed, actor, at);
    return changed;
  }

  /** 409 of a request that is not (or no longer) in the status a change needs. */
  const notIn = async (requestId: string, what: string): Promise<Error> => {
    const r = await store.access.get(requestId);
    const status = r?.status === 'pending' || r?.status === 'approved' ? `${r.status} but past its end` : (r?.status ?? 'gone');
    return conflict(`access request ${requestId} is ${status}: ${what}`);
  };

  return {
    visible,

    /** Asks for access; checks: 403 (role for each protocol), 404 (device), 422 (no policy asks, duration over the maximum). */
    async create(p: Principal, body: CreateRequestBody): Promise<AccessRequest> {
      requireAccess(p, 'sessions:write', 'developer', 'requesting access');
      // Asking only makes sense for what the role could open: the same minimum as opening a session.
      for (const protocol of body.protocols) requireAccess(p, 'sessions:write', PROTOCOL_MIN_ROLE[protocol], `requesting access for ${protocol}`);
      const device = await store.devices.get(body.device_id);
      if (!device) throw notFound(`no device ${body.device_id}`);
      const policies = (await store.access.policiesFor(device.labels)).filter((pol) => pol.protocols.some((x) => body.protocols.includes(x)));
      if (policies.length === 0) {
        throw new ApiError(
          'unprocessable_entity',
          `no access policy requires a request for ${body.protocols.join(', ')} on device ${device.device_id}: open the session directly`,
        );
      }
      const strictest = policies.reduce((a, b) => (b.max_duration_seconds < a.max_duration_seconds ? b : a));
      const max = strictest.max_duration_seconds;
      const duration = body.duration_seconds ?? max;
      if (duration > max) {
        throw new ApiError(
          'unprocessable_entity',
          `duration_seconds ${duration} is over the maximum of access policy "${strictest.name}" (${max} s) for device ${device.device_id}`,
          [{ path: 'duration_seconds', message: `must be at most ${max}` }],
        );
      }
      const t = now();
      const at = iso(t);
      const fields = {
        request_id: newRequestId(),
        requester: p.username,
        device_id: device.device_id,
        protocols: body.protocols,
        reason: body.reason,
        duration_seconds: duration,
        created_at: at,
        expires_at: iso(t + deps.pendingTtlSeconds * 1000),
      };
      return change('access_request.created', p.username, at, (tx) => tx.access.createRequest(fields));
    },

    /** Approves or denies; checks: 403 (administrator), 404, 403 `self_review_forbidden`, 409 (not pending). */
    async review(p: Principal, requestId: string, decision: 'approve' | 'deny', reason: string): Promise<AccessRequest> {
      requireAccess(p, 'sessions:write', 'administrator', 'reviewing access requests');
      const r = await visible(p, requestId);
      if (r.requester === p.username) {
        throw new ApiError('self_review_forbidden', `access request ${requestId} is your own: another administrator must ${decision} it`);
      }
      const t = now();
      const at = iso(t);
      if (decision === 'approve') {
        const endsAt = iso(t + r.duration_seconds * 1000);
        return change(
          'access_request.approved',
          p.username,
          at,
          (tx) => tx.access.approve(requestId, p.username, reason, at, endsAt),
          () => notIn(requestId, 'only a pending request can be approved'),
        );
      }
      return change(
        'access_request.denied',
        p.username,
        at,
        (tx) => tx.access.deny(requestId, p.username, reason, at),
        () => notIn(requestId, 'only a pending request can be denied'),
      );
    },

    /** Ends a grant now and closes its sessions (`access_revoked`); checks: 403, 404, 409 (not a live grant). */
    async revoke(p: Principal, requestId: string, reason: string | undefined): Promise<AccessRequest> {
      requireAccess(p, 'sessions:write', 'administrator', 'revoking access');
      await visible(p, requestId);
      const at = iso(now());
      const revoked = await change(
        'access_request.revoked',
        p.username,
        at,
        (tx) => tx.access.revoke(requestId, p.username, reason ?? null, at),
        () => notIn(requestId, 'only an approved grant that has not ended can be revoked'),
      );
      await deps.closeSessionsOf(requestId, p.username);
      return revoked;
    },

    /** Cancels the caller's own pending request; checks: 404 (not visible), 403 (not the requester), 409 (not pending). */
    async cancel(p: Principal, requestId: string): Promise<AccessRequest> {
      requireAccess(p, 'sessions:write', 'developer', 'canceling an access request');
      const r = await visible(p, requestId);
      if (r.requester !== p.username)
        throw forbidden(`only its requester (${r.requester}) can cancel access request ${requestId}; an administrator denies it instead`);
      const at = iso(now());
      return change(
        'access_request.canceled',
        p.username,
        at,
        (tx) => tx.access.cancel(requestId, at),
        () => notIn(requestId, 'only a pending request can be canceled'),
      );
    },
  };
}
export type AccessRequests = ReturnType<typeof createAccessRequests>;
