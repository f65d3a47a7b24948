/** @module The OpenAPI operations of the event stream and its tickets (./routes.ts). */
import { eventsTicket, streamQuery } from '../../shared/api/events';
import { okBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

export const eventOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/v1/events',
    operationId: 'streamEvents',
    tag: 'events',
    summary: 'Server-sent events of what the caller may see',
    description:
      'Events `agent.online`, `agent.offline` (data `{device_id, at}`) and `session.opened`, `session.closed` ' +
      '(data `{session_id, device_id, protocol, opened_by, at, close_reason?}`), `session.expiring` 5 and 1 minute before a session ends ' +
      '(data `{session_id, device_id, protocol, opened_by, expires_at, seconds_left}`; TETHER_SESSION_WARNINGS), a comment every 15 s, and an `end` event ' +
      'when the token stops being valid. Needs role developer and scope `devices:read`; a bearer token, or a one-time ' +
      '`ticket` from POST /v1/events/tickets (for EventSource, which cannot send headers).',
    auth: 'events',
    query: streamQuery,
    responses: {
      200: { description: 'the stream, until the client or the token goes', media: { 'text/event-stream': { type: 'string' } }, headers: ['Cache-Control'] },
    },
    errors: { 400: 'an unknown query parameter', 401: 'no valid token, or the ticket was used or expired', 403: 'role or scope missing' },
  },
  {
    method: 'post',
    path: '/v1/events/tickets',
    operationId: 'issueEventsTicket',
    tag: 'events',
    summary: 'A one-time ticket for GET /v1/events?ticket=',
    description: 'Valid for 30 s and a single use. Needs role developer and scope `devices:read`.',
    auth: 'bearer',
    responses: { 201: { description: 'the ticket', json: okBody('EventsTicketResponse', eventsTicket, 201) } },
    errors: { 403: 'role or scope missing' },
  },
];
