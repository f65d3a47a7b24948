/**
 * @module `GET /v1/audit/events`: the audit log of changes to who can do what, for administrators
 * (docs/http-api.md, audit log). What it takes and answers is `shared/api/audit.ts`.
 */
import Router from '@koa/router';
import { auditLogQuery, type AuditLogEvent } from '../../shared/api/audit';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { okList } from '../http/envelope';
import { rateLimit, type RateLimiter } from '../http/rate-limit';
import { offsetOf, parseQuery } from '../http/validate';
import { createAuditLogRepo } from '../store/audit-log';
import type { Store } from '../store/index';

/** Requests a minute per user, as the remote-access audit allows. */
export const AUDIT_EVENTS_PER_MINUTE = 60;

export function auditRoutes(store: Store, limiter: RateLimiter): Router {
  const router = new Router();
  const log = createAuditLogRepo(store.db);
  router.get('/v1/audit/events', rateLimit(limiter, AUDIT_EVENTS_PER_MINUTE), async function listAuditLog(ctx) {
    const q = parseQuery(ctx, auditLogQuery);
    requireAccess(principalOf(ctx), 'identity:read', 'administrator', 'reading the audit log');
    const { items, total } = await log.list({ ...q, limit: q.per_page, offset: offsetOf(q) });
    okList<AuditLogEvent>(ctx, items, q, total);
  });
  return router;
}
