/**
 * @module The parts of the OpenAPI document that operations share: its object types, references
 * to named schemas (`shared/api/` registers them) and headers, the error bodies and responses of
 * every status in both dialects (named `Error404`, `FleetError404`: each names exactly the codes
 * of its status in `shared/api/errors.ts`), the request headers, response headers and security
 * schemes (`components`).
 */
import type { z } from 'zod';
import { MAX_BODY_BYTES, models, named } from '../../shared/api/common';
import { contractErrorBody, ERROR_CODES, FLEET_ERRORS, fleetErrorBody, type Dialect } from '../../shared/api/errors';
import type { JsonSchema } from './operation';

export type OpenApiDocument = {
  openapi: string;
  info: { title: string; version: string; description: string };
  paths: Record<string, Record<string, OperationObject>>;
  components: { schemas: Record<string, JsonSchema>; responses: Record<string, ResponseObject> } & Record<string, unknown>;
} & Record<string, unknown>;

export interface OperationObject {
  operationId: string;
  responses: Record<string, ResponseObject | RefObject>;
  [key: string]: unknown;
}
export interface ResponseObject {
  description: string;
  headers?: Record<string, RefObject | JsonSchema>;
  content?: Record<string, { schema: JsonSchema }>;
}
export type RefObject = { $ref: string; description?: string };

/** A strong entity tag (RFC 9110): what `ETag` holds and `If-Match` compares. */
export const ETAG = { type: 'string', pattern: '^"[\\x21\\x23-\\x7E]*"$' };

const schemaRef = (id: string): RefObject => ({ $ref: `#/components/schemas/${id}` });
export const headerRef = (name: string): RefObject => ({ $ref: `#/components/headers/${name}` });

/** The `components.schemas` name of a registered model. */
export function refTo(schema: z.ZodType): RefObject {
  const id = models.get(schema)?.id;
  if (!id) throw new Error('a response schema of the OpenAPI document is not registered (shared/api/common.ts, named)');
  return schemaRef(id);
}

const byStatus = new Map<string, z.ZodType>();

export const errorResponseName = (dialect: Dialect, status: number) => `${dialect === 'fleet' ? 'FleetError' : 'Error'}${status}`;

/** The error body of `status` in `dialect`, registered once as `Error<status>` / `FleetError<status>`. */
export function errorBody(dialect: Dialect, status: number): z.ZodType {
  const id = errorResponseName(dialect, status);
  let schema = byStatus.get(id);
  if (!schema) {
    schema = named(id, dialect === 'fleet' ? fleetErrorBody(status) : contractErrorBody(status));
    byStatus.set(id, schema);
  }
  return schema;
}

/** The statuses that some code of the dialect carries. */
const errorStatuses = (dialect: Dialect): number[] =>
  [...new Set(Object.values<number>(dialect === 'fleet' ? FLEET_ERRORS : ERROR_CODES))].sort((a, b) => a - b);

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad request',
  401: 'No valid token: none, a malformed header, or an unknown, expired or revoked token',
  403: 'Forbidden',
  404: 'Not found',
  408: 'The headers or the body were not received in time',
  409: 'Conflict',
  412: 'If-Match does not match: the resource changed since it was read (the current tag is in ETag)',
  413: `The body exceeds ${MAX_BODY_BYTES} bytes`,
  415: 'Unsupported media type',
  422: 'Unprocessable',
  429: 'Rate limited: retry after Retry-After seconds',
  500: 'A bug: the message names the request id, and nothing else',
  503: 'Unavailable: retry after Retry-After seconds',
};

/** `components.responses`: every error status of both dialects, with its body and headers. */
export function errorResponses(): Record<string, ResponseObject> {
  const out: Record<string, ResponseObject> = {};
  for (const dialect of ['contract', 'fleet'] as const) {
    for (const status of errorStatuses(dialect)) {
      const headers: Record<string, RefObject> = { 'X-Request-ID': headerRef('X-Request-ID') };
      if (status === 429 || status === 503) headers['Retry-After'] = headerRef('Retry-After');
      if (status === 409) headers['Retry-After'] = headerRef('Retry-After-Optional');
      if (status === 412) headers.ETag = headerRef('ETag');
      out[errorResponseName(dialect, status)] = {
        description: STATUS_TEXT[status] ?? `HTTP ${status}`,
        headers,
        content: { 'application/json': { schema: refTo(errorBody(dialect, status)) } },
      };
    }
  }
  return out;
}

/** Request headers, response headers and security schemes, referred to by name. */
export const SHARED_COMPONENTS = {
  parameters: {
    'X-Tenant-ID': {
      name: 'X-Tenant-ID',
      in: 'header',
      required: true,
      description: 'The tenant; the token must be granted it (or `*`).',
      schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' },
    },
    'Idempotency-Key': {
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description:
        'Makes a retry safe: for 24 hours a request with the same key and the same request answers the first response again ' +
        '(with `Idempotent-Replayed: true`) without doing anything; the same key with another request is 422.',
      schema: { type: 'string', pattern: '^[\\x21-\\x7E]{1,255}$' },
    },
  },
  headers: {
    'X-Request-ID': { required: true, description: 'The request’s id: yours if you sent a plain one, else a new UUID.', schema: { type: 'string' } },
    'Retry-After': { required: true, description: 'Seconds to wait before retrying.', schema: { type: 'string', pattern: '^\\d+$' } },
    'Retry-After-Optional': { description: 'Seconds to wait before retrying, when waiting helps.', schema: { type: 'string', pattern: '^\\d+$' } },
    ETag: { description: 'The resource’s current entity tag, for If-Match.', schema: ETAG },
    'Idempotent-Replayed': {
      description: '`true` when this is the kept response of an earlier request with the same Idempotency-Key.',
      schema: { const: 'true' },
    },
    'Content-Disposition': { description: 'An attachment and its file name.', schema: { type: 'string' } },
    'Cache-Control': { description: 'How long the response may be kept.', schema: { type: 'string' } },
    'Content-Security-Policy': { description: 'The console’s strict policy: scripts only from this origin, no framing.', schema: { type: 'string' } },
    'Content-Encoding': { description: '`gzip` when the client accepts it.', schema: { type: 'string' } },
  },
  securitySchemes: {
    bearerAuth: { type: 'http', scheme: 'bearer', description: 'A user or service token (tth_…): `Authorization: Bearer <token>`.' },
    eventsTicket: { type: 'apiKey', in: 'query', name: 'ticket', description: 'A one-time ticket from POST /v1/events/tickets (30 s, single use).' },
  },
};
