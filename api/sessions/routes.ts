/** @module Remote-access sessions and their audit listing (docs/http-api.md, endpoints). */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';
import { SESSION_PROTOCOLS } from '../../shared/control-channel';
import { formatTarget, MAX_TARGETS, parseTarget } from '../../shared/forward-targets';
import type { Ticketer } from '../../shared/tickets';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { rateLimit, type RateLimiter } from '../http/rate-limit';
import { dateTimeParam, offsetOf, pagingParams, parseBody, parseQuery } from '../http/validate';
import { hasRole } from '../roles';
import { mayJoin, type Sessions } from './sessions';
import { AUDIT_EVENTS } from '../store/audit';
import type { Store } from '../store/index';
import type { SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';
import { ok, okList } from '../http/envelope';
import type { RecordingView } from '../recordings/routes';

export const SESSION_OPEN_PER_MINUTE = 30;
export const AUDIT_LIST_PER_MINUTE = 60;
export const TTL_MIN_S = 60;
export const TTL_MAX_S = 28800;

/** `HOST:PORT`, turned canonical (`shared/forward-targets.ts`). */
const forwardTarget = z
  .string()
  .max(300)
  .transform((text, ctx) => {
    const parsed = parseTarget(text);
    if (parsed.ok) return formatTarget(parsed.value);
    ctx.addIssue({ code: 'custom', message: parsed.problem });
    return z.NEVER;
  });

export const openBody = z
  .strictObject({
    device_id: z.string().min(1).max(64),
    protocol: z.enum(SESSION_PROTOCOLS),
    ttl_seconds: z.number().int().min(TTL_MIN_S).max(TTL_MAX_S).optional(),
    targets: z.array(forwardTarget).min(1).max(MAX_TARGETS).optional(),
  })
  .superRefine((body, ctx) => {
    if (body.protocol === 'port-forward' && !body.targets) {
      ctx.addIssue({ code: 'custom', path: ['targets'], message: `is required for a port-forward session: 1 to ${MAX_TARGETS} "HOST:PORT"` });
    }
    if (body.protocol !== 'port-forward' && body.targets) {
      ctx.addIssue({ code: 'custom', path: ['targets'], message: 'only a port-forward session has targets' });
    }
  })
  // The same target named twice (perhaps spelled differently) is one target.
  .transform((body) => (body.targets ? { ...body, targets: [...new Set(body.targets)] } : body));

export const listQuery = z.strictObject({
  ...pagingParams(200, 50),
  device_id: z.string().min(1).max(64).optional(),
  protocol: z.enum(SESSION_PROTOCOLS).optional(),
  status: z.enum(['open', 'closed']).optional(),
  since: dateTimeParam.optional(),
  has_recording: z.enum(['true', 'false'], { error: 'must be true or false' }).transform((v) => v === 'true').optional(),
});

export const auditQuery = z.strictObject({
  ...pagingParams(200, 50),
  session_id: z.string().min(1).max(64).optional(),
  device_id: z.string().min(1).max(64).optional(),
  event: z.enum(AUDIT_EVENTS).optional(),
  actor: z.string().min(1).max(254).optional(),
  since: dateTimeParam.optional(),
});

export interface SessionRoutesDeps {
  store: Store;
  sessions: Sessions;
  ticketer: Ticketer;
  /** `ws://host:port` or `wss://...`, from the public URL. */
  wsBase: () => string;
  openLimiter: RateLimiter;
  auditLimiter: RateLimiter;
  /** Safe retries of session opens (api/http/idempotency.ts). */
  idempotent: Middleware;
  /** The session's recording as its record shows it, or null. */
  recordingOf(sessionId: string): RecordingView | null;
}

export function sessionRoutes(deps: SessionRoutesDeps): Router {
  const { store, sessions, ticketer, wsBase } = deps;
  const router = new Router();

  /**
   * The session record. `websocket_url` only while it is open, and only for a token that may join
   * it (the owner's or an administrator's, with `sessions:write`): its ticket names that token.
   */
  function view(row: SessionRow, p: Principal) {
    const { session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at } = row;
    const websocket_url = status === 'open' && mayJoin(p, row)
      ? `${wsBase()}/v1/remote-access/sessions/${session_id}/stream?ticket=${ticketer.issue(session_id, p.token_id)}`
      : undefined;
    return {
      session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at,
      closed_at: row.closed_at,
      close_reason: row.close_reason,
      websocket_url,
      bytes_to_device: row.bytes_to_device,
      bytes_from_device: row.bytes_from_device,
      trace_id: row.trace_id,
      ...(row.targets && { targets: row.targets }),
      recording: deps.recordingOf(session_id),
    };
  }

  router.get('/v1/remote-access/sessions', function listSessions(ctx) {
    const q = parseQuery(ctx, listQuery);
    const p = principalOf(ctx);
    const { items, total } = sessions.list(p, { ...q, limit: q.per_page, offset: offsetOf(q) });
    okList(ctx, items.map((s) => view(s, p)), q, total);
  });

  router.post(
    '/v1/remote-access/sessions',
    deps.idempotent, // before the limit: a replay opens nothing, so it does not count
    rateLimit(deps.openLimiter, SESSION_OPEN_PER_MINUTE),
    async function openSession(ctx) {
      const body = await parseBody(ctx, openBody);
      const p = principalOf(ctx);
      ok(ctx, view(sessions.open(p, body), p), 201);
    },
  );

  router.get('/v1/remote-access/sessions/:sessionId', function getSession(ctx) {
    const p = principalOf(ctx);
    ok(ctx, view(sessions.get(p, ctx.params.sessionId!), p));
  });

  router.delete('/v1/remote-access/sessions/:sessionId', function closeSession(ctx) {
    const p = principalOf(ctx);
    ok(ctx, view(sessions.close(p, ctx.params.sessionId!), p));
  });

  router.get(
    '/v1/audit/remote-access',
    rateLimit(deps.auditLimiter, AUDIT_LIST_PER_MINUTE),
    function listAudit(ctx) {
      const q = parseQuery(ctx, auditQuery);
      const p = principalOf(ctx);
      requireAccess(p, 'sessions:read', 'developer');
      const owner = hasRole(p.role, 'administrator') ? undefined : p.username;
      const { items, total } = store.audit.list({ ...q, owner, limit: q.per_page, offset: offsetOf(q) });
      // `targets` appears where the session has them (port-forward), as in the session record.
      okList(ctx, items.map(({ targets, ...event }) => (targets ? { ...event, targets } : event)), q, total);
    },
  );

  return router;
}
