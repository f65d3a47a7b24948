/** @module The OpenAPI operations of remote-access sessions and their audit (./routes.ts). */
import { auditEvent, extendSessionBody, openSessionBody, session, sessionAuditQuery, sessionListQuery } from '../../shared/api/sessions';
import { listBody, okBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

const sessionBody = okBody('SessionResponse', session);
const sessionId = { sessionId: 'the session’s id (sess-…)' };

export const sessionOperations: OperationSpec[] = [
  {
    method: 'post',
    path: '/v1/remote-access/sessions',
    operationId: 'openSession',
    tag: 'sessions',
    summary: 'Open a session on a device',
    description:
      'Scope `sessions:write`; `diagnostics` developer and up, `shell` and `port-forward` platform-engineer and up, ' +
      '`file-transfer` administrator. 30 a minute per user. `targets` only, and always, for port-forward. A session with no client ' +
      'connected to its stream for TETHER_SESSION_IDLE_SECONDS (300 s) closes `idle`.',
    auth: 'bearer',
    idempotent: true,
    body: { schema: openSessionBody },
    responses: { 201: { description: 'the session, with its stream’s websocket_url', json: okBody('SessionOpenedResponse', session, 201) } },
    errors: {
      400: 'malformed body or target',
      403: 'role or scope missing for the protocol',
      404: 'no such device',
      409: 'a session of that protocol is open on the device (`holder` says whose, and since when)',
      422: 'the device’s agent is offline (`unprocessable_entity`), or does not forward to a target (`target_not_allowed`)',
      429: 'over 30 opens a minute',
      503: 'a cluster’s control node cannot reach its bus (NATS): no device can be reached now',
    },
  },
  {
    method: 'get',
    path: '/v1/remote-access/sessions',
    operationId: 'listSessions',
    tag: 'sessions',
    summary: 'Sessions, newest first',
    description: 'Your own (administrators: all). Developer and up, scope `sessions:read`; `websocket_url` as for one session.',
    auth: 'bearer',
    query: sessionListQuery,
    responses: { 200: { description: 'a page of sessions', json: listBody('SessionListResponse', session) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'role or scope missing' },
  },
  {
    method: 'get',
    path: '/v1/remote-access/sessions/{sessionId}',
    operationId: 'getSession',
    tag: 'sessions',
    summary: 'A session',
    description:
      'Its owner or an administrator, scope `sessions:read`; anyone else gets 404. `websocket_url` (with a ticket bound to this token) ' +
      'only while it is open and only for a token with `sessions:write`; a join by anyone but its owner is audited (`session.joined`).',
    auth: 'bearer',
    params: sessionId,
    responses: { 200: { description: 'the session', json: sessionBody } },
    errors: { 403: 'role or scope missing', 404: 'no such session, or not yours' },
  },
  {
    method: 'delete',
    path: '/v1/remote-access/sessions/{sessionId}',
    operationId: 'closeSession',
    tag: 'sessions',
    summary: 'Close a session',
    description: 'Its owner or an administrator, scope `sessions:write`.',
    auth: 'bearer',
    params: sessionId,
    responses: { 200: { description: 'the closed session', json: sessionBody } },
    errors: { 403: 'role or scope missing', 404: 'no such session, not yours, or already closed' },
  },
  {
    method: 'post',
    path: '/v1/remote-access/sessions/{sessionId}/extend',
    operationId: 'extendSession',
    tag: 'sessions',
    summary: 'Extend an open session',
    description:
      'Its owner or an administrator, scope `sessions:write`. The session then ends `ttl_seconds` from now (its new `expires_at`; ' +
      '`ttl_seconds` in the record becomes its whole life), as long as that whole life, from `opened_at`, stays within 28800 s: ' +
      'past it, 400 with `details` saying the most it may be extended by now. Audited (`session.extended`, reason: the new expires_at); ' +
      'the stream’s client and GET /v1/events are warned again before the new end. Counts in the 30-a-minute group of opening.',
    auth: 'bearer',
    idempotent: true,
    params: sessionId,
    body: { schema: extendSessionBody },
    responses: { 200: { description: 'the session, with its new expires_at', json: sessionBody } },
    errors: {
      400: 'malformed body, or past 28800 s from the session’s opening (`details` says the most it may be extended by now)',
      403: 'role or scope missing',
      404: 'no such session, or not yours',
      409: 'the session is closed',
      429: 'over 30 session opens and extends a minute',
    },
  },
  {
    method: 'get',
    path: '/v1/audit/remote-access',
    operationId: 'listSessionAudit',
    tag: 'sessions',
    summary: 'The remote-access audit, newest first',
    description:
      'Events of your own sessions (administrators: all). Developer and up, scope `sessions:read`; 60 a minute per user. ' +
      '`session.joined`: someone other than its owner (an administrator) connected to its stream; `actor` is who, `reason` the id of the token used. ' +
      '`session.extended`: its end moved; `reason` is the new expires_at.',
    auth: 'bearer',
    query: sessionAuditQuery,
    responses: { 200: { description: 'a page of events', json: listBody('AuditEventListResponse', auditEvent) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'role or scope missing', 429: 'over 60 requests a minute' },
  },
];
