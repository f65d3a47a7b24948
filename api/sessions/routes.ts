/**
 * @module Remote-access sessions and their audit listing (docs/http-api.md, endpoints). What each
 * takes and answers is `shared/api/sessions.ts`; `view` is the one producer of a session record.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import {
  extendSessionBody,
  openSessionBody,
  sessionAuditQuery,
  sessionListQuery,
  type AuditEvent,
  type Recording,
  type Session,
} from '../../shared/api/sessions';
import type { Ticketer } from '../../shared/auth/tickets';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { rateLimit, type RateLimiter } from '../http/rate-limit';
import { offsetOf, parseBody, parseQuery } from '../http/validate';
import { hasRole } from '../roles';
import { mayJoin, type Sessions } from './sessions';
import type { Store } from '../store/index';
import type { SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';
import { ok, okList } from '../http/envelope';

export const SESSION_OPEN_PER_MINUTE = 30;
export const AUDIT_LIST_PER_MINUTE = 60;

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
  recordingOf(sessionId: string): Promise<Recording | null>;
}

export function sessionRoutes(deps: SessionRoutesDeps): Router {
  const { store, sessions, ticketer, wsBase } = deps;
  const router = new Router();

  /** Where a device's streams are joined: the node (this one, or a peer) that holds its agent (docs/peers.md). */
  async function streamBase(deviceId: string): Promise<string> {
    const url = await store.devices.streamUrlOf(deviceId);
    return url === undefined ? wsBase() : url.replace(/^http/, 'ws');
  }

  /**
   * The session record. `websocket_url` only while it is open, and only for a token that may join
   * it (the owner's or an administrator's, with `sessions:write`): its ticket names that token.
   * It names the node that holds the device's agent, so the stream is spliced there.
   */
  async function view(row: SessionRow, p: Principal): Promise<Session> {
    const { session_id, device_id, protocol, status, ttl_seconds, opened_by, opened_at, expires_at } = row;
    const websocket_url =
      status === 'open' && mayJoin(p, row)
        ? `${await streamBase(device_id)}/v1/remote-access/sessions/${session_id}/stream?ticket=${ticketer.issue(session_id, p.token_id)}`
        : undefined;
    return {
      session_id,
      device_id,
      protocol,
      status,
      ttl_seconds,
      opened_by,
      opened_at,
      expires_at,
      closed_at: row.closed_at,
      close_reason: row.close_reason,
      websocket_url,
      bytes_to_device: row.bytes_to_device,
      bytes_from_device: row.bytes_from_device,
      trace_id: row.trace_id,
      ...(row.targets && { targets: row.targets }),
      ...(row.access_request_id !== null && { access_request_id: row.access_request_id }),
      recording: await deps.recordingOf(session_id),
    };
  }

  router.get('/v1/remote-access/sessions', async function listSessions(ctx) {
    const q = parseQuery(ctx, sessionListQuery);
    const p = principalOf(ctx);
    const { items, total } = await sessions.list(p, { ...q, limit: q.per_page, offset: offsetOf(q) });
    okList<Session>(ctx, await Promise.all(items.map((s) => view(s, p))), q, total);
  });

  router.post(
    '/v1/remote-access/sessions',
    deps.idempotent, // before the limit: a replay opens nothing, so it does not count
    rateLimit(deps.openLimiter, SESSION_OPEN_PER_MINUTE),
    async function openSession(ctx) {
      const body = await parseBody(ctx, openSessionBody);
      const p = principalOf(ctx);
      ok<Session>(ctx, await view(await sessions.open(p, body), p), 201);
    },
  );

  router.get('/v1/remote-access/sessions/:sessionId', async function getSession(ctx) {
    const p = principalOf(ctx);
    ok<Session>(ctx, await view(await sessions.get(p, ctx.params.sessionId!), p));
  });

  router.delete('/v1/remote-access/sessions/:sessionId', async function closeSession(ctx) {
    const p = principalOf(ctx);
    ok<Session>(ctx, await view(await sessions.close(p, ctx.params.sessionId!), p));
  });

  // The session writes share one rate-limit group (30 a minute per user) and take Idempotency-Key.
  router.post(
    '/v1/remote-access/sessions/:sessionId/extend',
    deps.idempotent,
    rateLimit(deps.openLimiter, SESSION_OPEN_PER_MINUTE),
    async function extendSession(ctx) {
      const body = await parseBody(ctx, extendSessionBody);
      const p = principalOf(ctx);
      ok<Session>(ctx, await view(await sessions.extend(p, ctx.params.sessionId!, body.ttl_seconds), p));
    },
  );

  router.get('/v1/audit/remote-access', rateLimit(deps.auditLimiter, AUDIT_LIST_PER_MINUTE), async function listAudit(ctx) {
    const q = parseQuery(ctx, sessionAuditQuery);
    const p = principalOf(ctx);
    requireAccess(p, 'sessions:read', 'developer');
    const owner = hasRole(p.role, 'administrator') ? undefined : p.username;
    const { items, total } = await store.audit.list({ ...q, owner, limit: q.per_page, offset: offsetOf(q) });
    // `targets` appears where the session has them (port-forward), as in the session record.
    okList<AuditEvent>(
      ctx,
      items.map(({ targets, ...event }) => (targets ? { ...event, targets } : event)),
      q,
      total,
    );
  });

  return router;
}
