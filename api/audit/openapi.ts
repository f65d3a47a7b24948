/** @module The OpenAPI operation of the audit log (./routes.ts). */
import { AUDIT_LOG_EVENTS, auditLogEvent, auditLogQuery } from '../../shared/api/audit';
import { listBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

export const auditOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/v1/audit/events',
    operationId: 'listAuditLog',
    tag: 'identity',
    summary: 'The audit log of changes to who can do what, newest first',
    description:
      `Administrator, scope \`identity:read\`; 60 a minute per user. Events: ${AUDIT_LOG_EVENTS.map((e) => `\`${e}\``).join(', ')}. ` +
      '`event` takes an event or a family ending in `.` (`user.`); `target` an id, or KIND:ID; `since` is inclusive, `until` exclusive. ' +
      'Failed logins of one username from one address within a minute are one event (`count`). The remote-access audit is GET /v1/audit/remote-access.',
    auth: 'bearer',
    query: auditLogQuery,
    responses: { 200: { description: 'a page of events', json: listBody('AuditLogListResponse', auditLogEvent) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'not an administrator, or the scope is missing', 429: 'over 60 requests a minute' },
  },
];
