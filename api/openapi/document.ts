/**
 * @module The OpenAPI 3.1 document of the API, built from the zod schemas of `shared/api/`: the
 * request schemas the routes validate with (zod's JSON Schema output, draft 2020-12, their input
 * side) and the response schemas registered there. Each feature's operation table (beside its
 * routes, e.g. api/sessions/openapi.ts) says what each route takes and answers; this module adds
 * what operations of a kind share (authentication, body limits, idempotency keys, `If-Match`,
 * `X-Request-ID`) and names every error body per status. `GET /v1/openapi.json` serves it and
 * `npm run build` writes it to docs/openapi.json.
 */
import { z } from 'zod';
import { MAX_BODY_BYTES, models } from '../../shared/api/common';
import { dialectOf, type Dialect } from '../../shared/api/errors';
import { TETHER_VERSION } from '../../shared/version';
import {
  errorBody,
  ETAG,
  errorResponseName,
  errorResponses,
  headerRef,
  refTo,
  SHARED_COMPONENTS,
  type OpenApiDocument,
  type OperationObject,
  type RefObject,
  type ResponseObject,
} from './components';
import { TAGS, type JsonSchema, type OperationSpec, type ResponseSpec } from './operation';

export type { OpenApiDocument, OperationObject, RefObject, ResponseObject } from './components';

/** zod's JSON Schema, as a part of the document (the document says the dialect, not each schema). */
function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { target: 'draft-2020-12', io }) as JsonSchema;
  return json;
}

/** Every error status the operation answers with, and when: its own and those its kind shares. */
function errorsOf(op: OperationSpec, dialect: Dialect): Map<number, string[]> {
  const errors = new Map<number, string[]>();
  const add = (status: number, when: string) => errors.set(status, [...(errors.get(status) ?? []), when]);
  for (const [status, when] of Object.entries(op.errors)) add(Number(status), when);
  const code = (name: string) => `\`${dialect === 'fleet' ? name.toUpperCase() : name}\``;
  if (op.auth !== 'public') add(401, 'no valid token');
  if (op.body) {
    add(408, 'the body was not received in time');
    add(413, `the body exceeds ${op.body.maxBytes ?? MAX_BODY_BYTES} bytes`);
  }
  if (op.idempotent) {
    add(400, 'a malformed Idempotency-Key');
    add(409, `a request with this Idempotency-Key is still being handled (${code('conflict')}, with Retry-After)`);
    add(422, `this Idempotency-Key was used for another request in the last 24 hours (${code('idempotency_key_reused')})`);
  }
  if (op.ifMatch) add(412, `If-Match does not match (${code('precondition_failed')}): the current tag is in ETag`);
  add(500, 'a bug');
  // Every request with a token reads the database: on PostgreSQL it may be away (docs/peers.md).
  if (op.auth !== 'public') add(503, 'the database did not answer (peers on PostgreSQL, docs/peers.md): retry after Retry-After');
  return new Map([...errors].sort(([a], [b]) => a - b));
}

function responseObject(r: ResponseSpec, headers: Record<string, RefObject | JsonSchema>): ResponseObject {
  const content: Record<string, { schema: JsonSchema }> = {};
  if (r.json) content['application/json'] = { schema: refTo(r.json) };
  for (const [type, schema] of Object.entries(r.media ?? {})) content[type] = { schema };
  for (const name of r.headers ?? []) headers[name] = headerRef(name);
  return { description: r.description, headers, ...(Object.keys(content).length > 0 && { content }) };
}

/** What common query parameters mean. */
const PARAM_TEXT: Record<string, string> = {
  page: 'the page',
  per_page: 'items per page',
  limit: 'items per page',
  env: 'the environment',
  dry_run: '`true`: validate and show the result, writing nothing',
  since: 'only what happened after this ISO 8601 date-time',
  ticket: 'a one-time ticket from POST /v1/events/tickets, instead of a bearer token',
  format: '`cast`: asciicast v2; `text`: the output as plain text',
  revision: 'the revision to roll back to; none: the previous one',
  all: '`true`: every user’s (administrators)',
};

/**
 * A query parameter's description: what it means, and for a whole number its range and default,
 * which only the parsed side of its schema knows (the query string holds text).
 */
function describeParam(name: string, parsed: JsonSchema | undefined): string | undefined {
  const parts = PARAM_TEXT[name] ? [PARAM_TEXT[name]] : [];
  if (parsed?.type === 'integer') {
    parts.push(`a whole number from ${String(parsed.minimum)} to ${String(parsed.maximum)}`);
    if (parsed.default !== undefined) parts.push(`default ${String(parsed.default)}`);
  }
  return parts.length > 0 ? parts.join('; ') : undefined;
}

function parametersOf(op: OperationSpec): JsonSchema[] {
  const placeholders = [...op.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const described = Object.keys(op.params ?? {});
  if (placeholders.join() !== described.join()) throw new Error(`${op.operationId}: path parameters ${placeholders} described as ${described}`);
  const params: JsonSchema[] = placeholders.map((name) => ({
    name,
    in: 'path',
    required: true,
    description: op.params![name],
    schema: { type: 'string' },
  }));
  if (op.query) {
    type ObjectSchema = { properties?: Record<string, JsonSchema>; required?: string[] };
    const query = jsonSchemaOf(op.query, 'input') as ObjectSchema;
    // Read for the ranges of numbers only (a transform's output has no JSON Schema: it reads as {}).
    const parsed = z.toJSONSchema(op.query, { target: 'draft-2020-12', io: 'output', unrepresentable: 'any' }) as ObjectSchema;
    for (const [name, schema] of Object.entries(query.properties ?? {})) {
      const description = describeParam(name, parsed.properties?.[name]);
      params.push({ name, in: 'query', required: query.required?.includes(name) ?? false, ...(description && { description }), schema });
    }
  }
  if (op.tenant) params.push({ $ref: '#/components/parameters/X-Tenant-ID' });
  if (op.idempotent) params.push({ $ref: '#/components/parameters/Idempotency-Key' });
  if (op.ifMatch) {
    params.push({
      name: 'If-Match',
      in: 'header',
      required: false,
      description: `Write only if this is still the current ETag: ${op.ifMatch}.`,
      schema: { type: 'string' },
    });
  }
  return params;
}

const SECURITY = { public: [], bearer: [{ bearerAuth: [] }], events: [{ bearerAuth: [] }, { eventsTicket: [] }] };

function operationObject(op: OperationSpec): OperationObject {
  const dialect = dialectOf(op.path);
  const responses: Record<string, ResponseObject | RefObject> = {};
  for (const [status, r] of Object.entries(op.responses)) {
    const headers: Record<string, RefObject | JsonSchema> = { 'X-Request-ID': headerRef('X-Request-ID') };
    if (Number(status) < 300) {
      if (op.etag) headers.ETag = { required: op.etag.always, description: `the ETag of ${op.etag.of}, for If-Match`, schema: ETAG };
      if (op.idempotent) headers['Idempotent-Replayed'] = headerRef('Idempotent-Replayed');
    }
    responses[status] = responseObject(r, headers);
  }
  for (const [status, when] of errorsOf(op, dialect)) {
    if (responses[status]) throw new Error(`${op.operationId}: ${status} is both a response and an error`);
    errorBody(dialect, status); // registers the body's schema
    responses[status] = { $ref: `#/components/responses/${errorResponseName(dialect, status)}`, description: when.join('; ') };
  }
  const parameters = parametersOf(op);
  return {
    operationId: op.operationId,
    tags: [op.tag],
    summary: op.summary,
    ...(op.description && { description: op.description }),
    security: SECURITY[op.auth],
    ...(parameters.length > 0 && { parameters }),
    ...(op.body && {
      requestBody: {
        required: op.body.required ?? true,
        ...(op.body.description && { description: op.body.description }),
        content: Object.fromEntries((op.body.mediaTypes ?? ['application/json']).map((type) => [type, { schema: jsonSchemaOf(op.body!.schema, 'input') }])),
      },
    }),
    responses,
  };
}

const DESCRIPTION = `The operator API of tether: devices and their agents, remote-access sessions, deployments and fleet groups.

Successes are \`{"status": <http>, "data": …}\`, lists add \`"meta": {page, per_page, total}\`; errors are \`{"error": code, "message": text, "status": http, "details"?: [{path, message}]}\`. The fleet interface (\`/v1/fleet/…\`) answers \`{"status": "success", "data", "timestamp", "request_id"}\` and errors \`{"status": "error", "error": {code, message, details?}, "timestamp", "request_id"}\`. Every response carries \`X-Request-ID\`. Checks run in this order and the first failing one answers: 401, 429, 400, 403, 404, 503, 422, 409. A request Node's HTTP parser refuses (malformed, headers over 16 KiB, too slow) is answered 400 or 408 in the error shape of its path. docs/http-api.md describes the same in prose.`;

/** The OpenAPI 3.1 document of `operations` (api/operations.ts: everything `createApi()` serves). */
export function buildOpenApiDocument(operations: readonly OperationSpec[]): OpenApiDocument {
  const paths: Record<string, Record<string, OperationObject>> = {};
  for (const op of operations) {
    const item = (paths[op.path] ??= {});
    if (item[op.method]) throw new Error(`${op.method.toUpperCase()} ${op.path} is described twice`);
    item[op.method] = operationObject(op);
  }
  const responses = errorResponses();
  // Converted last: every schema an operation names is registered by now.
  const converted = z.toJSONSchema(models, { target: 'draft-2020-12', uri: (id) => `#/components/schemas/${id}` }).schemas;
  const schemas = Object.fromEntries(Object.entries(converted).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema as JsonSchema]));
  return {
    openapi: '3.1.0',
    info: { title: 'tether API', version: TETHER_VERSION, description: DESCRIPTION },
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    security: SECURITY.bearer,
    paths,
    components: { schemas, responses, ...SHARED_COMPONENTS },
  };
}

/** Objects with their keys sorted, arrays as they are: the same document always reads the same. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

/** The document as docs/openapi.json holds it: pretty JSON, keys sorted below the top level. */
export function serializeDocument(doc: OpenApiDocument): string {
  const top = Object.fromEntries(Object.entries(doc).map(([key, value]) => [key, sortedKeys(value)]));
  return `${JSON.stringify(top, null, 2)}\n`;
}
