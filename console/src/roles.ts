/**
 * @module Who may use what, so the console offers only what the signed-in user's role can do. The
 * server decides (api/roles.ts; a test keeps the two tables equal): this only hides what it would
 * refuse with 403.
 */
import type { Me, Role } from '../../shared/api/identity';
import type { SessionProtocol } from '../../shared/protocol/control-channel';

/** Lowest first, as the server orders them. */
const ORDER: readonly Role[] = ['developer', 'platform-engineer', 'administrator'];

/** The lowest role that may open a session of each protocol (docs/http-api.md, endpoints). */
export const PROTOCOL_MIN_ROLE: Record<SessionProtocol, Role> = {
  diagnostics: 'developer',
  shell: 'platform-engineer',
  'file-transfer': 'administrator',
  'port-forward': 'platform-engineer',
};

/** True when the user's role is `minimum` or higher; no user, or no role, passes no check. */
export function hasRole(me: Pick<Me, 'role'> | undefined, minimum: Role): boolean {
  return !!me?.role && ORDER.indexOf(me.role) >= ORDER.indexOf(minimum);
}

export const isAdmin = (me: Pick<Me, 'role'> | undefined) => hasRole(me, 'administrator');

/** Whether the user may open a session of `protocol`. */
export const mayOpen = (me: Pick<Me, 'role'> | undefined, protocol: SessionProtocol) => hasRole(me, PROTOCOL_MIN_ROLE[protocol]);
