/** @module Users, tokens and `GET /v1/me` (docs/http-api.md, endpoints). */
import Router from '@koa/router';
import { z } from 'zod';
import { ApiError } from '../errors';
import { requireAccess, SCOPES } from '../access';
import { principalOf } from '../http/auth';
import type { RateLimiter } from '../http/rate-limit';
import { parseBody } from '../http/validate';
import { roleSchema } from '../roles';
import { SERVICE_TOKEN_MAX_TTL_S, type Identity } from './identity';
import { ok } from '../http/envelope';

export const usernameSchema = z
  .string()
  .min(1)
  .max(254)
  .regex(/^[A-Za-z0-9._@+-]+$/, 'may hold only letters, digits and . _ @ + -');

const newUserBody = z.strictObject({
  username: usernameSchema,
  role: roleSchema.nullable().optional(),
  kind: z.enum(['human', 'service']).optional(),
  password: z.string().min(8, 'must be at least 8 characters').max(1024).optional(),
});

const loginBody = z.strictObject({
  username: z.string().min(1).max(254),
  password: z.string().min(1).max(1024),
});

const tenantSchema = z.union([z.literal('*'), z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 of [A-Za-z0-9._-] or *')]);

const tokenBody = z.strictObject({
  username: usernameSchema,
  ttl_seconds: z.number().int().min(1).max(SERVICE_TOKEN_MAX_TTL_S).optional(),
  scopes: z.array(z.enum(SCOPES)).max(32).optional(),
  tenants: z.array(tenantSchema).max(1000).optional(),
});

/** Failed logins allowed per username in a sliding minute; beyond, 429 until the oldest ages out. */
export const LOGIN_FAILURES_PER_MINUTE = 10;

/**
 * Routes that need no token: exchanging a password for one. Failed attempts are limited per
 * username, so passwords cannot be guessed at speed (scrypt alone costs an attacker little with
 * many connections); successful logins never count.
 */
export function publicIdentityRoutes(identity: Identity, failures: RateLimiter): Router {
  const router = new Router();
  router.post('/v1/auth/token', async function issueUserToken(ctx) {
    const body = await parseBody(ctx, loginBody);
    const wait = failures.peek(body.username);
    if (wait > 0) {
      throw new ApiError(
        'rate_limited',
        `too many failed logins for this user: ${LOGIN_FAILURES_PER_MINUTE} per minute; retry in ${wait} s`,
        undefined,
        { 'Retry-After': String(wait) },
      );
    }
    try {
      ok(ctx, await identity.login(body.username, body.password));
    } catch (err) {
      if (err instanceof ApiError && err.code === 'unauthorized') failures.take(body.username);
      throw err;
    }
  });
  return router;
}

export function identityRoutes(identity: Identity): Router {
  const router = new Router();

  router.get('/v1/me', function me(ctx) {
    const p = principalOf(ctx);
    ok(ctx, {
      username: p.username,
      role: p.role,
      kind: p.kind,
      scopes: p.scopes,
      tenants: p.tenants,
      token_id: p.token_id,
      expires_at: p.expires_at,
    });
  });

  router.post('/v1/users', async function createUser(ctx) {
    const body = await parseBody(ctx, newUserBody);
    requireAccess(principalOf(ctx), 'identity:write', 'administrator', 'creating users');
    ok(ctx, await identity.createUser(body), 201);
  });

  router.get('/v1/users', function listUsers(ctx) {
    requireAccess(principalOf(ctx), 'identity:read', 'administrator', 'listing users');
    ok(ctx, identity.listUsers());
  });

  router.post('/v1/tokens', async function issueToken(ctx) {
    const body = await parseBody(ctx, tokenBody);
    const issuer = principalOf(ctx);
    requireAccess(issuer, 'identity:write', 'administrator', 'issuing tokens');
    ok(ctx, identity.issueToken(body.username, body, issuer), 201);
  });

  router.delete('/v1/tokens/:tokenId', function revokeToken(ctx) {
    requireAccess(principalOf(ctx), 'identity:write', 'administrator', 'revoking tokens');
    identity.revokeToken(ctx.params.tokenId!);
    ok(ctx, { token_id: ctx.params.tokenId, revoked: true });
  });

  return router;
}
