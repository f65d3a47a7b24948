/** @module The operations that need no token (health, metrics, the console, this document) and the event stream. */
import { z } from 'zod';
import { streamQuery } from '../../events/routes';
import { okBody } from '../envelopes';
import { named, timestamp } from '../models';
import type { OperationSpec } from '../operation';

const text = { type: 'string' };
const ASSET_TYPES = ['application/javascript', 'text/css', 'image/svg+xml', 'image/png', 'image/x-icon', 'font/woff2', 'application/json', 'application/octet-stream'];
const CONSOLE_HEADERS = ['Content-Security-Policy', 'Cache-Control'] as const;

const health = named('Health', z.strictObject({ status: z.literal('ok') }));
const ready = named('Readiness', z.strictObject({ status: z.literal('ready'), database: z.literal('open') }));
const notReady = named('NotReady', z.strictObject({ status: z.literal('not ready'), database: z.literal('unavailable') }));
const openApiDocument = named(
  'OpenApiDocument',
  z.looseObject({ openapi: z.string().regex(/^3\.1\.\d+$/), info: z.looseObject({ title: z.string(), version: z.string() }), paths: z.record(z.string(), z.unknown()) }),
);
const eventsTicket = okBody('EventsTicketResponse', z.strictObject({ ticket: z.string(), expires_at: timestamp }), 201);

export const publicOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/healthz',
    operationId: 'getHealth',
    tag: 'health',
    summary: 'The process is up',
    auth: 'public',
    responses: { 200: { description: 'up', json: health } },
    errors: {},
  },
  {
    method: 'get',
    path: '/readyz',
    operationId: 'getReadiness',
    tag: 'health',
    summary: 'The database is open',
    auth: 'public',
    responses: { 200: { description: 'ready to serve', json: ready }, 503: { description: 'the database is not usable', json: notReady } },
    errors: {},
  },
  {
    method: 'get',
    path: '/metrics',
    operationId: 'getMetrics',
    tag: 'health',
    summary: 'Prometheus metrics',
    auth: 'public',
    responses: { 200: { description: 'the Prometheus text format, version 0.0.4', media: { 'text/plain': text } } },
    errors: {},
  },
  {
    method: 'get',
    path: '/',
    operationId: 'getConsolePage',
    tag: 'console',
    summary: 'The web console’s page',
    auth: 'public',
    responses: {
      200: { description: 'the page', media: { 'text/html': text }, headers: [...CONSOLE_HEADERS] },
      503: { description: 'the console is not built: how to build it', media: { 'text/plain': text }, headers: ['Content-Security-Policy'] },
    },
    errors: {},
  },
  {
    method: 'get',
    path: '/assets/{file}',
    operationId: 'getConsoleAsset',
    tag: 'console',
    summary: 'A script or stylesheet of the web console',
    description: 'Content-hashed names, cached for good; gzipped when the browser takes gzip.',
    auth: 'public',
    params: { file: 'a built asset’s name, e.g. app-3F2A1C.js' },
    responses: {
      200: {
        description: 'the asset',
        media: Object.fromEntries(ASSET_TYPES.map((type) => [type, type === 'application/json' ? { type: 'object', description: 'a source map' } : text])),
        headers: [...CONSOLE_HEADERS, 'Content-Encoding'],
      },
      404: { description: 'no such asset', media: { 'text/plain': text } },
    },
    errors: {},
  },
  {
    method: 'get',
    path: '/v1/openapi.json',
    operationId: 'getOpenApiDocument',
    tag: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    auth: 'public',
    responses: { 200: { description: 'the document', json: openApiDocument } },
    errors: {},
  },
  {
    method: 'get',
    path: '/v1/events',
    operationId: 'streamEvents',
    tag: 'events',
    summary: 'Server-sent events of what the caller may see',
    description:
      'Events `agent.online`, `agent.offline` (data `{device_id, at}`) and `session.opened`, `session.closed` ' +
      '(data `{session_id, device_id, protocol, opened_by, at, close_reason?}`), a comment every 15 s, and an `end` event ' +
      'when the token stops being valid. Needs role developer and scope `devices:read`; a bearer token, or a one-time ' +
      '`ticket` from POST /v1/events/tickets (for EventSource, which cannot send headers).',
    auth: 'events',
    query: streamQuery,
    responses: { 200: { description: 'the stream, until the client or the token goes', media: { 'text/event-stream': text }, headers: ['Cache-Control'] } },
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
    responses: { 201: { description: 'the ticket', json: eventsTicket } },
    errors: { 403: 'role or scope missing' },
  },
];
