/**
 * @module Who sees which session: administrators every one, everyone else only their own. A
 * session the caller may not see is 404, so its existence never leaks; reading, listing and
 * closing go by it, and so do joining a session's stream and being shown its ticket.
 */
import { hasScope, requireAccess, type Scope } from '../access';
import { notFound } from '../errors';
import { hasRole } from '../roles';
import type { Store } from '../store/index';
import type { SessionQuery, SessionRow } from '../store/sessions';
import type { Principal } from '../store/tokens';

const isAdmin = (p: Principal) => hasRole(p.role, 'administrator');
/** Administrators see every session; everyone else only their own. */
export const canSee = (p: Principal, s: SessionRow) => isAdmin(p) || s.opened_by === p.username;
/** Who may join a session's stream, and be shown its ticket: one who may see it, with a token that may write sessions. */
export const mayJoin = (p: Principal, s: SessionRow): boolean => canSee(p, s) && hasScope(p, 'sessions:write');

/** The session if the caller may see it, else 404 (existence never leaks). */
export async function visibleSession(store: Store, principal: Principal, sessionId: string, scope: Scope = 'sessions:read'): Promise<SessionRow> {
  requireAccess(principal, scope, 'developer');
  const row = await store.sessions.get(sessionId);
  if (!row || !canSee(principal, row)) throw notFound(`no session ${sessionId}`);
  return row;
}

/** The sessions the caller may see that match the query. */
export async function listVisible(store: Store, principal: Principal, q: Omit<SessionQuery, 'opened_by'>) {
  requireAccess(principal, 'sessions:read', 'developer');
  return store.sessions.list({ ...q, opened_by: isAdmin(principal) ? undefined : principal.username });
}
