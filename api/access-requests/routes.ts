/**
 * @module Access policies and requests over HTTP (CONTRACT 10.3; docs/access.md). What each takes
 * and answers is `shared/api/access.ts`. Policies: administrators create and delete them (scope
 * `identity:write`: they decide who may reach what), anyone who may open sessions reads them (so
 * a user sees why a device asks for a request). Requests: scopes `sessions:read` and
 * `sessions:write` (they are about sessions); seen by their requester and administrators, anyone
 * else gets 404, so a request's existence never leaks.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import {
  ACCESS_LIMITS,
  createPolicyBody,
  createRequestBody,
  policiesQuery,
  requestsQuery,
  reviewBody,
  revokeBody,
  type AccessPolicy,
  type AccessRequest,
} from '../../shared/api/access';
import { randomBase32 } from '../../shared/ids';
import { requireAccess } from '../access';
import { notFound } from '../errors';
import type { EventHub } from '../events/hub';
import { principalOf } from '../http/auth';
import { ok, okList } from '../http/envelope';
import { offsetOf, parseBody, parseQuery } from '../http/validate';
import { auditSourceOf, eventsOf, recordAudit } from '../audit/recorder';
import { createAccessRepo } from '../store/access';
import type { Store } from '../store/index';
import { atomically } from '../store/schema';
import { createAccessRequests, isAdmin } from './requests';

export interface AccessRoutesDeps {
  store: Store;
  events: EventHub;
  /** Safe retries of creates (api/http/idempotency.ts). */
  idempotent: Middleware;
  now: () => number;
  /** How long a request stays pending (TETHER_ACCESS_REQUEST_TTL_SECONDS). */
  pendingTtlSeconds: number;
  /** Closes the open sessions of a revoked grant, at once (`access_revoked`). */
  closeSessionsOf(requestId: string, actor: string): Promise<unknown>;
}

export function accessRoutes(deps: AccessRoutesDeps): Router {
  const { store, now } = deps;
  const requests = createAccessRequests(deps);
  const router = new Router();

  router.post('/v1/access-policies', deps.idempotent, async function createPolicy(ctx) {
    const p = principalOf(ctx);
    requireAccess(p, 'identity:write', 'administrator', 'creating access policies');
    const body = await parseBody(ctx, createPolicyBody);
    const policy: AccessPolicy = {
      policy_id: `apol_${randomBase32(20)}`,
      name: body.name,
      match: { labels: body.match.labels },
      protocols: body.protocols,
      max_duration_seconds: body.max_duration_seconds ?? ACCESS_LIMITS.maxDurationSeconds.default,
      created_by: p.username,
      created_at: new Date(now()).toISOString(),
    };
    // Who may open what changed: the policy and its audit event commit together.
    const { policy_id, name, match, protocols, max_duration_seconds } = policy;
    await atomically(store.db, async (db) => {
      await createAccessRepo(db).createPolicy(policy);
      const record = {
        event: 'policy.created',
        target: { kind: 'policy', id: policy_id },
        details: { name, labels: match.labels, protocols, max_duration_seconds },
      } as const;
      await recordAudit(db, eventsOf(auditSourceOf(ctx), policy.created_at, [record]));
    });
    ok<AccessPolicy>(ctx, policy, 201);
  });

  router.get('/v1/access-policies', async function listPolicies(ctx) {
    const q = parseQuery(ctx, policiesQuery);
    requireAccess(principalOf(ctx), 'sessions:read', 'developer');
    const { items, total } = await store.access.listPolicies(q.per_page, offsetOf(q));
    okList<AccessPolicy>(ctx, items, q, total);
  });

  router.delete('/v1/access-policies/:policyId', async function deletePolicy(ctx) {
    requireAccess(principalOf(ctx), 'identity:write', 'administrator', 'deleting access policies');
    const id = ctx.params.policyId!;
    const at = new Date(now()).toISOString();
    const deleted = await atomically(store.db, async (db) => {
      if (!(await createAccessRepo(db).deletePolicy(id, at))) return false;
      await recordAudit(db, eventsOf(auditSourceOf(ctx), at, [{ event: 'policy.deleted', target: { kind: 'policy', id } }]));
      return true;
    });
    if (!deleted) throw notFound(`no access policy ${id}`);
    ctx.status = 204;
  });

  router.post('/v1/access-requests', deps.idempotent, async function createRequest(ctx) {
    const body = await parseBody(ctx, createRequestBody);
    ok<AccessRequest>(ctx, await requests.create(principalOf(ctx), body), 201);
  });

  router.get('/v1/access-requests', async function listRequests(ctx) {
    const q = parseQuery(ctx, requestsQuery);
    const p = principalOf(ctx);
    requireAccess(p, 'sessions:read', 'developer');
    // Others' requests are not there for a non-administrator: asking for them finds none.
    if (!isAdmin(p) && q.requester !== undefined && q.requester !== p.username) return okList<AccessRequest>(ctx, [], q, 0);
    const { items, total } = await store.access.list({
      status: q.status,
      device_id: q.device_id,
      requester: isAdmin(p) ? q.requester : p.username,
      since: q.since,
      limit: q.per_page,
      offset: offsetOf(q),
    });
    okList<AccessRequest>(ctx, items, q, total);
  });

  router.get('/v1/access-requests/:requestId', async function getRequest(ctx) {
    const p = principalOf(ctx);
    requireAccess(p, 'sessions:read', 'developer');
    ok<AccessRequest>(ctx, await requests.visible(p, ctx.params.requestId!));
  });

  router.post('/v1/access-requests/:requestId/approve', async function approveRequest(ctx) {
    const body = await parseBody(ctx, reviewBody);
    ok<AccessRequest>(ctx, await requests.review(principalOf(ctx), ctx.params.requestId!, 'approve', body.reason));
  });

  router.post('/v1/access-requests/:requestId/deny', async function denyRequest(ctx) {
    const body = await parseBody(ctx, reviewBody);
    ok<AccessRequest>(ctx, await requests.review(principalOf(ctx), ctx.params.requestId!, 'deny', body.reason));
  });

  router.post('/v1/access-requests/:requestId/revoke', async function revokeRequest(ctx) {
    const body = await parseBody(ctx, revokeBody);
    ok<AccessRequest>(ctx, await requests.revoke(principalOf(ctx), ctx.params.requestId!, body.reason));
  });

  router.delete('/v1/access-requests/:requestId', async function cancelRequest(ctx) {
    ok<AccessRequest>(ctx, await requests.cancel(principalOf(ctx), ctx.params.requestId!));
  });

  return router;
}
