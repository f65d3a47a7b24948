/** @module Users, tokens and `GET /v1/me` (CONTRACT section 2). */
import Router from '@koa/router';
import { z } from 'zod';
import { principalOf, requireRole } from '../http/auth';
import { parseBody } from '../http/validate';
import { roleSchema } from '../roles';
import { SERVICE_TOKEN_MAX_TTL_S, type IdentityService } from '../services/identity';
import { ok } from './envelope';

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
  scopes: z.array(z.enum(['fleet:read', 'fleet:write', '*'])).max(16).optional(),
  tenants: z.array(tenantSchema).max(1000).optional(),
});

/** Routes that need no token: exchanging a password for one. */
export function publicIdentityRoutes(identity: IdentityService): Router {
  const router = new Router();
  router.post('/v1/auth/token', async function issueUserToken(ctx) {
    const body = await parseBody(ctx, loginBody);
    ok(ctx, await identity.login(body.username, body.password));
  });
  return router;
}

export function identityRoutes(identity: IdentityService): Router {
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
    requireRole(principalOf(ctx), 'administrator', 'creating users');
    ok(ctx, await identity.createUser(body), 201);
  });

  router.get('/v1/users', function listUsers(ctx) {
    requireRole(principalOf(ctx), 'administrator', 'listing users');
    ok(ctx, identity.listUsers());
  });

  router.post('/v1/tokens', async function issueToken(ctx) {
    const body = await parseBody(ctx, tokenBody);
    requireRole(principalOf(ctx), 'administrator', 'issuing tokens');
    ok(ctx, identity.issueToken(body.username, body), 201);
  });

  router.delete('/v1/tokens/:tokenId', function revokeToken(ctx) {
    requireRole(principalOf(ctx), 'administrator', 'revoking tokens');
    identity.revokeToken(ctx.params.tokenId!);
    ok(ctx, { token_id: ctx.params.tokenId, revoked: true });
  });

  return router;
}
