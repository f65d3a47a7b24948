/** Roles and scopes: requireAccess checks the role, then the scope, and names what is missing; an issued token is never broader than its issuer. */
import { describe, expect, it } from 'vitest';
import { hasScope, PRE_SCOPE_GRANT, requireAccess, requireWithinIssuer } from '../../../api/access';
import { SCOPES } from '../../../shared/api/identity';
import { ApiError } from '../../../api/errors';
import type { Principal } from '../../../api/store/tokens';

const principal = (over: Partial<Principal> = {}): Principal => ({
  token_id: 'tok_1',
  username: 'ann',
  role: 'platform-engineer',
  kind: 'human',
  scopes: ['*'],
  tenants: [],
  created_at: '2026-01-01T00:00:00.000Z',
  expires_at: null,
  revoked_at: null,
  ...over,
});

/** The 403 that `fn` throws (fails the test if it throws anything else or nothing). */
function forbiddenBy(fn: () => void): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('forbidden');
    expect((err as ApiError).status).toBe(403);
    return err as ApiError;
  }
  throw new Error('expected a 403, nothing was thrown');
}

describe('hasScope', () => {
  it('is true for the scope itself or `*`, false otherwise', () => {
    expect(hasScope({ scopes: ['sessions:read'] }, 'sessions:read')).toBe(true);
    expect(hasScope({ scopes: ['*'] }, 'identity:write')).toBe(true);
    expect(hasScope({ scopes: ['sessions:read'] }, 'sessions:write')).toBe(false);
    expect(hasScope({ scopes: [] }, 'devices:read')).toBe(false);
  });

  it('takes no prefix or pattern for a scope', () => {
    expect(hasScope({ scopes: ['sessions'] }, 'sessions:read')).toBe(false);
    expect(hasScope({ scopes: ['sessions:*'] }, 'sessions:read')).toBe(false);
  });
});

describe('PRE_SCOPE_GRANT', () => {
  it('is every scope outside the fleet and jobs interfaces, and not `*`', () => {
    expect(PRE_SCOPE_GRANT).not.toContain('*');
    expect(PRE_SCOPE_GRANT.some((s) => s.startsWith('fleet:'))).toBe(false);
    expect(PRE_SCOPE_GRANT.some((s) => s.startsWith('jobs:'))).toBe(false);
    expect(PRE_SCOPE_GRANT.length).toBe(SCOPES.length - 5); // `*`, fleet:read, fleet:write, jobs:read, jobs:write
  });
});

describe('requireAccess', () => {
  it('passes with the role or a higher one and the scope or `*`', () => {
    expect(() => requireAccess(principal({ role: 'developer', scopes: ['devices:read'] }), 'devices:read', 'developer')).not.toThrow();
    expect(() => requireAccess(principal({ role: 'administrator' }), 'devices:write', 'platform-engineer')).not.toThrow();
  });

  it('refuses a lower role and names both the required role and the held one', () => {
    const err = forbiddenBy(() => requireAccess(principal({ role: 'developer' }), 'sessions:write', 'platform-engineer'));
    expect(err.message).toBe('this operation requires role platform-engineer or higher; your role is developer');
  });

  it('refuses a user with no role whatever the minimum', () => {
    const err = forbiddenBy(() => requireAccess(principal({ role: null }), 'sessions:read', 'developer'));
    expect(err.message).toBe('this operation requires role developer or higher; you have no role');
  });

  it('refuses a missing scope and lists the scopes the token has', () => {
    const p = principal({ role: 'administrator', scopes: ['sessions:read', 'devices:read'] });
    const err = forbiddenBy(() => requireAccess(p, 'sessions:write', 'developer'));
    expect(err.message).toBe('this operation requires scope sessions:write; this token has sessions:read, devices:read');
  });

  it('says so when the token has no scopes at all', () => {
    const err = forbiddenBy(() => requireAccess(principal({ role: 'administrator', scopes: [] }), 'identity:read', 'administrator'));
    expect(err.message).toBe('this operation requires scope identity:read; this token has no scopes');
  });

  it('checks the role before the scope: a caller lacking both is told about the role', () => {
    const err = forbiddenBy(() => requireAccess(principal({ role: 'developer', scopes: [] }), 'identity:write', 'administrator'));
    expect(err.message).toMatch(/requires role administrator or higher; your role is developer$/);
  });

  it('words the message with the action when given', () => {
    const err = forbiddenBy(() => requireAccess(principal({ role: 'developer' }), 'deployments:write', 'platform-engineer', 'deploying to prod'));
    expect(err.message).toBe('deploying to prod requires role platform-engineer or higher; your role is developer');
  });
});

describe('requireWithinIssuer', () => {
  const hour = 3600_000;
  const issuerExpiry = '2026-01-01T08:00:00.000Z';
  const limit = Date.parse(issuerExpiry);

  it('lets `*` issue any scope, and only `*` issue `*`', () => {
    expect(() => requireWithinIssuer(principal({ scopes: ['*'] }), { scopes: ['*'], tenants: [], expiresAt: null })).not.toThrow();
    expect(() => requireWithinIssuer(principal({ scopes: ['*'] }), { scopes: ['fleet:write'], tenants: [], expiresAt: null })).not.toThrow();
    const issuer = principal({ scopes: [...PRE_SCOPE_GRANT, 'fleet:read', 'fleet:write'] });
    const err = forbiddenBy(() => requireWithinIssuer(issuer, { scopes: ['*'], tenants: [], expiresAt: null }));
    expect(err.message).toBe('a token can only issue scopes it holds itself; this token lacks *');
  });

  it('allows a subset of the scopes held and names every one missing', () => {
    const issuer = principal({ scopes: ['sessions:read', 'sessions:write'] });
    expect(() => requireWithinIssuer(issuer, { scopes: ['sessions:read'], tenants: [], expiresAt: null })).not.toThrow();
    expect(() => requireWithinIssuer(issuer, { scopes: [], tenants: [], expiresAt: null })).not.toThrow();
    const err = forbiddenBy(() => requireWithinIssuer(issuer, { scopes: ['sessions:read', 'devices:read', 'identity:write'], tenants: [], expiresAt: null }));
    expect(err.message).toBe('a token can only issue scopes it holds itself; this token lacks devices:read, identity:write');
  });

  it('allows tenants the issuer holds, any tenant from `*`, and names every one missing', () => {
    const issuer = principal({ tenants: ['acme', 'globex'] });
    expect(() => requireWithinIssuer(issuer, { scopes: [], tenants: ['acme'], expiresAt: null })).not.toThrow();
    expect(() => requireWithinIssuer(principal({ tenants: ['*'] }), { scopes: [], tenants: ['*', 'initech'], expiresAt: null })).not.toThrow();
    const err = forbiddenBy(() => requireWithinIssuer(issuer, { scopes: [], tenants: ['acme', 'initech', '*'], expiresAt: null }));
    expect(err.message).toBe('a token can only issue tenants it holds itself; this token lacks initech, *');
    // a token with no tenants issues none
    forbiddenBy(() => requireWithinIssuer(principal({ tenants: [] }), { scopes: [], tenants: ['acme'], expiresAt: null }));
  });

  it('checks scopes before tenants', () => {
    const err = forbiddenBy(() => requireWithinIssuer(principal({ scopes: [], tenants: [] }), { scopes: ['fleet:read'], tenants: ['acme'], expiresAt: null }));
    expect(err.message).toMatch(/scopes it holds itself; this token lacks fleet:read$/);
  });

  it('caps the lifetime at the issuer expiry: equal is allowed, later or never is refused', () => {
    const issuer = principal({ expires_at: issuerExpiry });
    expect(() => requireWithinIssuer(issuer, { scopes: [], tenants: [], expiresAt: limit - hour })).not.toThrow();
    expect(() => requireWithinIssuer(issuer, { scopes: [], tenants: [], expiresAt: limit })).not.toThrow();
    const later = forbiddenBy(() => requireWithinIssuer(issuer, { scopes: [], tenants: [], expiresAt: limit + 1 }));
    expect(later.message).toBe(`a token cannot outlive the token that issues it; this one expires at ${issuerExpiry}`);
    const never = forbiddenBy(() => requireWithinIssuer(issuer, { scopes: [], tenants: [], expiresAt: null }));
    expect(never.message).toBe(later.message);
  });

  it('puts no ceiling on a token issued by one that never expires', () => {
    expect(() => requireWithinIssuer(principal({ expires_at: null }), { scopes: [], tenants: [], expiresAt: null })).not.toThrow();
    expect(() => requireWithinIssuer(principal({ expires_at: null }), { scopes: [], tenants: [], expiresAt: limit + 1000 * hour })).not.toThrow();
  });
});
