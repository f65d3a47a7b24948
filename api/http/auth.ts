/**
 * @module Bearer authentication (docs/http-api.md, conventions). A token must be known, unrevoked and
 * unexpired on every request, so a revocation takes effect on the next one. Role and scope
 * checks are in `../access`.
 */
import type { Context, Middleware } from 'koa';
import { unauthorized } from '../errors';
import type { Principal } from '../store/tokens';
import { bearerToken } from '../../shared/auth/bearer';

/** What authentication needs: the valid principal of a raw token at `now`, or undefined. */
export interface PrincipalResolver {
  resolve(token: string, now: number): Promise<Principal | undefined>;
}

export function authenticate(tokens: PrincipalResolver, now: () => number): Middleware {
  return async function authenticateMiddleware(ctx, next) {
    const token = bearerToken(ctx.get('authorization') || undefined);
    if (!token) throw unauthorized('missing or malformed Authorization header; expected "Bearer <token>"');
    const principal = await tokens.resolve(token, now());
    if (!principal) throw unauthorized('token is unknown, expired or revoked');
    ctx.state.principal = principal;
    await next();
  };
}

/** The authenticated principal of a request that went through `authenticate`. */
export const principalOf = (ctx: Context): Principal => ctx.state.principal as Principal;
