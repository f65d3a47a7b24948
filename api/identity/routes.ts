/**
 * @module Users, tokens and `GET /v1/me` (docs/http-api.md, endpoints; users and tokens). What
 * each takes and answers is `shared/api/identity.ts`.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import {
  loginBody,
  newUserBody,
  passwordBody,
  tokenBody,
  tokenListQuery,
  userChangeBody,
  type IssuedToken,
  type Me,
  type PasswordSet,
  type ScopeName,
  type Token,
  type TokenRevoked,
  type User,
  type UserDeleted,
} from '../../shared/api/identity';
import { ApiError } from '../errors';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { accessFirst } from '../http/idempotency';
import type { RateLimiter } from '../http/rate-limit';
import { offsetOf, parseBody, parseQuery } from '../http/validate';
import { auditSourceOf } from '../audit/recorder';
import type { Store } from '../store/index';
import type { Accounts } from './accounts';
import type { AuditedIdentity } from './audited';
import { listTokens as tokenPage } from './token-listing';
import { ok, okList } from '../http/envelope';

/** A token's scopes: checked against the catalogue when it was issued (the store keeps them as text). */
const scopesOf = (scopes: string[]) => scopes as ScopeName[];

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
  const { wait, release } = await failures.reserve(username);
  if (wait > 0) {
    throw new ApiError('rate_limited', `too many failed logins for this user: ${LOGIN_FAILURES_PER_MINUTE} per minute; retry in ${wait} s`, undefined, {
      'Retry-After': String(wait),
    });
  }
  let failed = false;
  try {
    return await attempt(() => {
      failed = true;
    });
  } finally {
    if (!failed) await release();
  }
}

/**
 * Routes that need no token: exchanging a password for one. Failed attempts are limited per
 * username, so passwords cannot be guessed at speed (scrypt alone costs an attacker little with
 * many connections); successful logins never count.
 */
export function publicIdentityRoutes(identity: AuditedIdentity, failures: RateLimiter): Router {
  const router = new Router();
  router.post('/v1/auth/token', async function issueUserToken(ctx) {
    const body = await parseBody(ctx, loginBody);
    const { trace_id, source_ip } = auditSourceOf(ctx, body.username);
    const issued = await limitedAttempt(failures, body.username, async function login(wrong) {
      try {
        return await identity.login(body.username, body.password, { trace_id, source_ip });
      } catch (err) {
        if (err instanceof ApiError && err.code === 'unauthorized') wrong();
        throw err;
      }
    });
    ok<IssuedToken>(ctx, issued);
  });
  return router;
}

export interface IdentityRouteDeps {
  store: Store;
  /** The login limiter: a wrong current password in a password change counts as a failed login of that user. */
  failures: RateLimiter;
  /** Safe retries of the creating POSTs (api/http/idempotency.ts). */
  idempotent: Middleware;
  now: () => number;
}

/**
 * The routes that need a token. `failures` is the login limiter: a wrong current password in a
 * password change counts as a failed login of that user. Each creating POST checks access before
 * `idempotent`, so that a replayed response goes only to a caller the request itself would serve.
 */
export function identityRoutes(identity: AuditedIdentity, accounts: Accounts, deps: IdentityRouteDeps): Router {
  const { store, failures, idempotent, now } = deps;
  const router = new Router();

  router.get('/v1/me', function me(ctx) {
    const p = principalOf(ctx);
    ok<Me>(ctx, {
      username: p.username,
      role: p.role,
      kind: p.kind,
      scopes: scopesOf(p.scopes),
      tenants: p.tenants,
      token_id: p.token_id,
      expires_at: p.expires_at,
    });
  });

  router.post('/v1/users', accessFirst('identity:write', 'administrator', 'creating users'), idempotent, async function createUser(ctx) {
    const body = await parseBody(ctx, newUserBody);
    ok<User>(ctx, await identity.createUser(body, auditSourceOf(ctx)), 201);
  });

  router.get('/v1/users', async function listUsers(ctx) {
    requireAccess(principalOf(ctx), 'identity:read', 'administrator', 'listing users');
    ok<User[]>(ctx, await store.users.list());
  });

  router.patch('/v1/users/:username', async function changeUser(ctx) {
    const body = await parseBody(ctx, userChangeBody);
    ok<User>(ctx, await accounts.updateUser(principalOf(ctx), ctx.params.username!, body, auditSourceOf(ctx)));
  });

  router.delete('/v1/users/:username', async function deleteUser(ctx) {
    ok<UserDeleted>(ctx, await accounts.deleteUser(principalOf(ctx), ctx.params.username!, auditSourceOf(ctx)));
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
    ok<PasswordSet>(ctx, await accounts.changePassword(principalOf(ctx), username, body, checkCurrent, auditSourceOf(ctx)));
  });

  router.get('/v1/tokens', async function listTokens(ctx) {
    const q = parseQuery(ctx, tokenListQuery);
    const at = new Date(now()).toISOString();
    const { items, total } = await tokenPage(store, principalOf(ctx), { ...q, limit: q.per_page, offset: offsetOf(q) }, at);
    okList<Token>(
      ctx,
      items.map((t) => ({ ...t, scopes: scopesOf(t.scopes) })),
      q,
      total,
    );
  });

  router.post('/v1/tokens', accessFirst('identity:write', 'administrator', 'issuing tokens'), idempotent, async function issueToken(ctx) {
    const body = await parseBody(ctx, tokenBody);
    // Bounded by the issuer too (its scopes, tenants, lifetime): a replay is of this token's own key only.
    ok<IssuedToken>(ctx, await identity.issueToken(body.username, body, principalOf(ctx), auditSourceOf(ctx)), 201);
  });

  router.delete('/v1/tokens/:tokenId', async function revokeToken(ctx) {
    await accounts.revokeToken(principalOf(ctx), ctx.params.tokenId!, auditSourceOf(ctx));
    ok<TokenRevoked>(ctx, { token_id: ctx.params.tokenId!, revoked: true });
  });

  return router;
}
