/**
 * @module Safe retries (docs/http-api.md, safe retries): the `Idempotency-Key` header on the POSTs
 * that create things. The first request under a caller's key runs; once it has succeeded its
 * response is kept for 24 hours, and a retry with the same key and the same request gets that
 * response again, marked `Idempotent-Replayed: true`, without running anything. The same key
 * with another request is 422 `idempotency_key_reused`; one that arrives while the first is
 * still running is 409 `conflict` with `Retry-After`. A request that fails keeps nothing (it
 * changed nothing), so its retry runs again.
 *
 * A replay must never hand a caller what the request itself would refuse it (a bearer token, an
 * agent token, another tenant's group). So keys are per token, not per user: a narrow token of a
 * user cannot replay the response its broad token got. A route puts its checks of who may make
 * the request before this middleware (`accessFirst`), so they run for a replay too; and as a
 * backstop for checks made later in a handler, a response is replayed only while the user's role
 * is still at least what it was when the response was made.
 */
import { createHash } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { requireAccess, type Scope } from '../access';
import { ApiError, badRequest, forbidden } from '../errors';
import { hasRole, type Role } from '../roles';
import type { Store } from '../store/index';
import type { StoredResponse } from '../store/idempotency';
import type { Principal } from '../store/tokens';
import { principalOf } from './auth';
import { readRawBody } from './body';

const KEY = /^[\x21-\x7e]{1,255}$/;
/** Response headers a replay repeats (the rest are the request's own: request id, dates). */
const KEPT_HEADERS = ['content-type', 'etag', 'location'];
const SWEEP_EVERY_MS = 60_000;

/** What makes two requests "the same": where they go and everything they send. */
function fingerprintOf(ctx: Context, body: Buffer): string {
  const hash = createHash('sha256');
  for (const part of [ctx.method, ctx.path, ctx.querystring, ctx.get('x-tenant-id'), ctx.get('content-type')]) hash.update(`${part}\n`);
  return hash.update(body).digest('hex');
}

/**
 * Whose keys a request's are: its token's. Rows written while keys were per user hold the bare
 * username, which never contains a `/`, so they can never answer a token.
 */
const callerOf = (p: Principal) => `${p.username}/${p.token_id}`;

/** True while `now` is at least `then` (no role is the lowest). */
const stillHolds = (now: Role | null, then: Role | null | undefined) => !then || hasRole(now, then);

/**
 * `requireAccess` as a middleware, for a route with `Idempotency-Key`: placed before the
 * idempotency middleware, a replay is checked exactly as the request itself.
 */
export function accessFirst(scope: Scope, minimum: Role, action: string): Middleware {
  return function accessBeforeReplay(ctx, next) {
    requireAccess(principalOf(ctx), scope, minimum, action);
    return next();
  };
}

export type IdempotencyGuard = Middleware;

/** The middleware for one route; one instance serves every route (keys are per token, not per route). */
export function createIdempotency(store: Store, now: () => number): IdempotencyGuard {
  let lastSweep = 0;
  return async function idempotencyMiddleware(ctx, next) {
    const key = ctx.get('idempotency-key');
    if (key === '') return next();
    if (!KEY.test(key))
      throw badRequest('invalid Idempotency-Key header: 1 to 255 visible ASCII characters', [
        { path: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' },
      ]);
    const at = now();
    if (at - lastSweep > SWEEP_EVERY_MS) {
      lastSweep = at;
      await store.idempotency.expire(at);
    }
    const principal = principalOf(ctx);
    const caller = callerOf(principal);
    // The body is read here, once, and kept for the handler (readRawBody returns it again).
    const body = await readRawBody(ctx);
    const claim = await store.idempotency.begin(caller, key, fingerprintOf(ctx, body), at);
    switch (claim.kind) {
      case 'reused':
        throw new ApiError('idempotency_key_reused', 'this Idempotency-Key was used for another request in the last 24 hours; use a new key for a new request');
      case 'in_progress':
        throw new ApiError('conflict', 'a request with this Idempotency-Key is still being handled; retry once it has finished', undefined, {
          'Retry-After': '1',
        });
      case 'replay':
        if (!stillHolds(principal.role, claim.response.role)) {
          throw forbidden(
            `this Idempotency-Key's request was made with role ${claim.response.role}; yours is now ${principal.role ?? 'none'}: send the request with a new key`,
          );
        }
        return replay(ctx, claim.response);
      case 'claimed':
        break;
    }
    let kept = false;
    try {
      await next();
      if (ctx.status >= 200 && ctx.status < 300 && isJson(ctx.body)) {
        const headers: Record<string, string> = {};
        for (const name of KEPT_HEADERS) {
          const value = ctx.response.get(name);
          if (value) headers[name] = value;
        }
        await store.idempotency.finish(caller, key, { status: ctx.status, headers, body: ctx.body, role: principal.role });
        kept = true;
      }
    } finally {
      if (!kept) await store.idempotency.release(caller, key);
    }
  };
}

const isJson = (body: unknown) =>
  body !== null && typeof body === 'object' && !Buffer.isBuffer(body) && typeof (body as { pipe?: unknown }).pipe !== 'function';

function replay(ctx: Context, response: StoredResponse): void {
  ctx.status = response.status;
  ctx.body = response.body;
  for (const [name, value] of Object.entries(response.headers)) ctx.set(name, value);
  ctx.set('Idempotent-Replayed', 'true');
}
