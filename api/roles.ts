/** @module Roles, lowest first, and the checks that compare them (docs/http-api.md, tokens, roles and scopes). */
import { z } from 'zod';
import type { SessionProtocol } from '../shared/control-channel';

export const ROLES = ['developer', 'platform-engineer', 'administrator'] as const;
export const roleSchema = z.enum(ROLES);
export type Role = z.infer<typeof roleSchema>;

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
