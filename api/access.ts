/**
 * @module Who may do what: roles (what a user may do) and scopes (what a token of that user may
 * do). Every operation names its scope and minimum role; a token whose scopes are not `*` can
 * only do what its scopes name, within its user's role. Issuing a token is bounded the same way:
 * a token can only issue tokens no broader than itself (scopes, tenants and lifetime), so a
 * short-lived, narrow token can never mint a broad or permanent one.
 */
import { SCOPES } from '../shared/api/identity';
import { forbidden } from './errors';
import { hasRole, type Role } from './roles';
import type { Principal } from './store/tokens';

/** A scope a token may hold (`*` is every scope: the catalogue is `shared/api/identity.ts`). */
export type Scope = Exclude<(typeof SCOPES)[number], '*'>;

/**
 * What a token issued before scopes covered every interface could do: everything its role
 * allowed then, outside `/v1/fleet` (migration 5 writes this list where a token had no scopes).
 * Jobs came later: such a token does not get them.
 */
export const PRE_SCOPE_GRANT: readonly Scope[] = SCOPES.filter((s): s is Scope => s !== '*' && !s.startsWith('fleet:') && !s.startsWith('jobs:'));

/** True when the token holds `scope` (or `*`). */
export const hasScope = (p: Pick<Principal, 'scopes'>, scope: Scope): boolean => p.scopes.includes('*') || p.scopes.includes(scope);

/**
 * Throws 403 unless the caller's role is `minimum` or higher and its token holds `scope`; the
 * message names what is missing. `action` words the message ("deploying to prod").
 */
export function requireAccess(principal: Principal, scope: Scope, minimum: Role, action?: string): void {
  const what = action ? `${action} requires` : 'this operation requires';
  if (!hasRole(principal.role, minimum)) {
    const held = principal.role ? `your role is ${principal.role}` : 'you have no role';
    throw forbidden(`${what} role ${minimum} or higher; ${held}`);
  }
  if (!hasScope(principal, scope)) {
    const held = principal.scopes.length > 0 ? `this token has ${principal.scopes.join(', ')}` : 'this token has no scopes';
    throw forbidden(`${what} scope ${scope}; ${held}`);
  }
}

/** What a token asks to be issued with, after defaults. */
export interface TokenGrant {
  scopes: string[];
  tenants: string[];
  /** Absolute expiry in ms, or null for none. */
  expiresAt: number | null;
}

const covers = (held: readonly string[], wanted: string) => held.includes('*') || held.includes(wanted);

/**
 * Refuses (403) a token broader than the one issuing it: a scope or tenant the issuer does not
 * hold (`*` only from `*`), or an expiry later than the issuer's own.
 */
export function requireWithinIssuer(issuer: Principal, grant: TokenGrant): void {
  const scopes = grant.scopes.filter((s) => !covers(issuer.scopes, s));
  if (scopes.length > 0) {
    throw forbidden(`a token can only issue scopes it holds itself; this token lacks ${scopes.join(', ')}`);
  }
  const tenants = grant.tenants.filter((t) => !covers(issuer.tenants, t));
  if (tenants.length > 0) {
    throw forbidden(`a token can only issue tenants it holds itself; this token lacks ${tenants.join(', ')}`);
  }
  if (issuer.expires_at !== null) {
    const limit = Date.parse(issuer.expires_at);
    if (grant.expiresAt === null || grant.expiresAt > limit) {
      throw forbidden(`a token cannot outlive the token that issues it; this one expires at ${issuer.expires_at}`);
    }
  }
}
