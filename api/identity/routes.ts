/** @module Users, tokens and `GET /v1/me` (docs/http-api.md, endpoints; users and tokens). */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { z } from 'zod';
import { ApiError } from '../errors';
import { requireAccess, SCOPES } from '../access';
import { principalOf } from '../http/auth';
import { accessFirst } from '../http/idempotency';
import type { RateLimiter } from '../http/rate-limit';
import { offsetOf, pagingParams, parseBody, parseQuery } from '../http/validate';
import { roleSchema } from '../roles';
import type { Accounts } from './accounts';
import { SERVICE_TOKEN_MAX_TTL_S, type Identity } from './identity';
import { ok, okList } from '../http/envelope';

export const usernameSchema = z
  .string()
  .min(1)
  .max(254)
  .regex(/^[A-Za-z0-9._@+-]+$/, 'may hold only letters, digits and . _ @ + -');

const passwordSchema = z.string().min(8, 'must be at least 8 characters').max(1024);

export const newUserBody = z.strictObject({
  username: usernameSchema,
  role: roleSchema.nullable().optional(),
  kind: z.enum(['human', 'service']).optional(),
  password: passwordSchema.optional(),
});

export const userChangeBody = z
  .strictObject({
    role: roleSchema.nullable().optional(),
    disabled: z.boolean().optional(),
  })
  .refine((b) => b.role !== undefined || b.disabled !== undefined, 'give role, disabled or both');

export const passwordBody = z.strictObject({
  password: passwordSchema,
  current_password: z.string().min(1).max(1024).optional(),
  revoke_tokens: z.boolean().optional(),
});

export const tokenListQuery = z
  .strictObject({
    ...pagingParams(200, 50),
    all: z.enum(['true', 'false']).transform((v) => v === 'true').optional(),
    username: usernameSchema.optional(),
    status: z.enum(['active', 'revoked', 'expired', 'all']).default('active'),
  })
  .refine((q) => !(q.all === true && q.username !== undefined), { path: ['all'], message: 'give all=true or username, not both' });

export const loginBody = z.strictObject({
  username: z.string().min(1).max(254),
  password: z.string().min(1).max(1024),
});

const tenantSchema = z.union([z.literal('*'), z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 of [A-Za-z0-9._-] or *')]);

export const tokenBody = z.strictObject({
  username: usernameSchema,
  ttl_seconds: z.number().int().min(1).max(SERVICE_TOKEN_MAX_TTL_S).optional(),
  scopes: z.array(z.enum(SCOPES)).max(32).optional(),
  tenants: z.array(tenantSchema).max(1000).optional(),
});

/** Failed logins allowed per username in a sliding minute; beyond, 429 until the oldest ages out. */
export const LOGIN_FAILURES_PER_MINUTE = 10;

/**
 * Runs one password check of `username` (a login, or a password change's `current_password`)
 * under the failed-login limit. The attempt counts before its hash runs: counted only once it
 * had failed, every guess sent at once would be checked while the first were still hashing. It
 * is given back unless `attempt` calls `wrong`, so successes (and checks that never ran) never
 * count.
 */
async function limitedAttempt<T>(failures: RateLimiter, username: string, attempt: (wrong: () => void) => Promise<T>): Promise<T> {
  const { wait, release } = failures.reserve(username);
  if (wait > 0) {
    throw new ApiError(
      'rate_limited',
      `too many failed logins for this user: ${LOGIN_FAILURES_PER_MINUTE} per minute; retry in ${wait} s`,
      undefined,
      { 'Retry-After': String(wait) },
    );
  }
  let failed = false;
  try {
    return await attempt(() => {
      failed = true;
    });
  } finally {
    if (!failed) release();
  }
}

/**
 * Routes that need no token: exchanging a password for one. Failed attempts are limited per
 * username, so passwords cannot be guessed at speed (scrypt alone costs an attacker little with
 * many connections); successful logins never count.
 */
export function publicIdentityRoutes(identity: Identity, failures: RateLimiter): Router {
  const router = new Router();
  router.post('/v1/auth/token', async function issueUserToken(ctx) {
    const body = await parseBody(ctx, loginBody);
    const issued = await limitedAttempt(failures, body.username, async function login(wrong) {
      try {
        return await identity.login(body.username, body.password);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'unauthorized') wrong();
        throw err;
      }
    });
    ok(ctx, issued);
  });
  return router;
}

/**
 * The routes that need a token. `failures` is the login limiter: a wrong current password in a
 * password change counts as a failed login of that user. Each creating POST checks access before
 * `idempotent`, so that a replayed response goes only to a caller the request itself would serve.
 */
export function identityRoutes(identity: Identity, accounts: Accounts, failures: RateLimiter, idempotent: Middleware): Router {
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

  router.post('/v1/users', accessFirst('identity:write', 'administrator', 'creating users'), idempotent, async function createUser(ctx) {
    const body = await parseBody(ctx, newUserBody);
    ok(ctx, await identity.createUser(body), 201);
  });

  router.get('/v1/users', function listUsers(ctx) {
    requireAccess(principalOf(ctx), 'identity:read', 'administrator', 'listing users');
    ok(ctx, identity.listUsers());
  });

  router.patch('/v1/users/:username', async function changeUser(ctx) {
    const body = await parseBody(ctx, userChangeBody);
    ok(ctx, accounts.updateUser(principalOf(ctx), ctx.params.username!, body));
  });

  router.delete('/v1/users/:username', function deleteUser(ctx) {
    ok(ctx, accounts.deleteUser(principalOf(ctx), ctx.params.username!));
  });

  router.put('/v1/users/:username/password', async function changePassword(ctx) {
    const body = await parseBody(ctx, passwordBody);
    const username = ctx.params.username!;
    const checkCurrent = (verify: () => Promise<boolean>) =>
      limitedAttempt(failures, username, async function checkCurrentPassword(wrong) {
        const right = await verify();
        if (!right) wrong();
        return right;
      });
    ok(ctx, await accounts.changePassword(principalOf(ctx), username, body, checkCurrent));
  });

  router.get('/v1/tokens', function listTokens(ctx) {
    const q = parseQuery(ctx, tokenListQuery);
    const { items, total } = accounts.listTokens(principalOf(ctx), { ...q, limit: q.per_page, offset: offsetOf(q) });
    okList(ctx, items, q, total);
  });

  router.post('/v1/tokens', accessFirst('identity:write', 'administrator', 'issuing tokens'), idempotent, async function issueToken(ctx) {
    const body = await parseBody(ctx, tokenBody);
    // Bounded by the issuer too (its scopes, tenants, lifetime): a replay is of this token's own key only.
    ok(ctx, identity.issueToken(body.username, body, principalOf(ctx)), 201);
  });

  router.delete('/v1/tokens/:tokenId', function revokeToken(ctx) {
    accounts.revokeToken(principalOf(ctx), ctx.params.tokenId!);
    ok(ctx, { token_id: ctx.params.tokenId, revoked: true });
  });

  return router;
}
