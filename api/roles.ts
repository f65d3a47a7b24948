/** @module The checks that compare roles, lowest first as `shared/api/identity.ts` lists them (docs/http-api.md, tokens, roles and scopes). */
import { ROLES, type Role } from '../shared/api/identity';
import type { SessionProtocol } from '../shared/protocol/control-channel';

export type { Role } from '../shared/api/identity';

/** True when `role` is `minimum` or higher; a user with no role passes no check. */
export function hasRole(role: Role | null, minimum: Role): boolean {
  return role !== null && ROLES.indexOf(role) >= ROLES.indexOf(minimum);
}

/** The lowest role that may open a session of each protocol (docs/http-api.md, endpoints). */
export const PROTOCOL_MIN_ROLE: Record<SessionProtocol, Role> = {
  diagnostics: 'developer',
  shell: 'platform-engineer',
  'file-transfer': 'administrator',
  'port-forward': 'platform-engineer',
};
