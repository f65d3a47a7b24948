/**
 * @module Bearer authentication (seed 5, rules 1–3) and role checks. A token must be known,
 * unrevoked and unexpired on every request, so a revocation takes effect on the next one.
 */
import type { Context, Middleware } from 'koa';
import { forbidden, unauthorized } from '../errors';
import { hasRole, type Role } from '../roles';
import type { Principal } from '../store/tokens';
import { bearerToken } from '../../shared/bearer';
import type { TokenResolver } from './token-cache';

export function authenticate(tokens: TokenResolver, now: () => number): Middleware {
  return async function authenticateMiddleware(ctx, next) {
    const token = bearerToken(ctx.get('authorization') || undefined);
    if (!token) throw unauthorized('missing or malformed Authorization header; expected "Bearer <token>"');
    const principal = tokens.resolve(token, now());
    if (!principal) throw unauthorized('token is unknown, expired or revoked');
    ctx.state.principal = principal;
    await next();
  };
}

/** The authenticated principal of a request that went through `authenticate`. */
export const principalOf = (ctx: Context): Principal => ctx.state.principal as Principal;

/** Throws 403 naming the required role unless the caller has `minimum` or higher. */
export function requireRole(principal: Principal, minimum: Role, action?: string): void {
  if (hasRole(principal.role, minimum)) return;
  const held = principal.role ? `your role is ${principal.role}` : 'you have no role';
  const what = action ? `${action} requires` : 'this operation requires';
  throw forbidden(`${what} role ${minimum} or higher; ${held}`);
}
