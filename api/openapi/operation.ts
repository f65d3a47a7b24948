/**
 * @module How an operation is described for the OpenAPI document: one plain object per route, in
 * a table beside the feature's routes (`api/<feature>/openapi.ts`), naming the request schemas the
 * route validates with and the response schemas it answers with (both from `shared/api/`). The
 * document builder (`./document`) adds what every operation of a kind shares: authentication's
 * 401, 500, the body limits, idempotency keys, `If-Match`, `X-Request-ID`.
 */
import type { z } from 'zod';

export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** A JSON Schema, as it appears in the document. */
export type JsonSchema = Record<string, unknown>;

export const TAGS = {
  health: 'Liveness, readiness and metrics; no token needed.',
  console: 'The web console’s page and assets (docs/console.md).',
  openapi: 'This document.',
  identity: 'Password logins, users and tokens (docs/http-api.md, users and tokens).',
  devices: 'The device registry and agent presence.',
  sessions: 'Remote-access sessions, their recordings and their audit.',
  events: 'Server-sent events of what the caller may see.',
  services: 'Deployments per environment from a service spec (docs/http-api.md, deployments).',
  fleet: 'Tenant-scoped vehicle groups, with an envelope and errors of their own (docs/http-api.md, fleet groups).',
  jobs: 'One operation across many devices at a controlled pace, the blobs file-push jobs write, and what agents fetch (docs/jobs.md).',
  access: 'Access policies and requests: an approved request before a session on a protected device (docs/access.md).',
  webhooks: 'Audit events POSTed, signed, to URLs administrators subscribe, with a deliveries log (docs/access.md, webhooks).',
} as const;
export type Tag = keyof typeof TAGS;

/** Response headers the document names (`components.headers`). */
export type ResponseHeader = 'ETag' | 'Retry-After' | 'Content-Disposition' | 'Cache-Control' | 'Content-Security-Policy' | 'Content-Encoding';

export interface ResponseSpec {
  description: string;
  /** The JSON body: a schema registered by name (`named` of `shared/api/common.ts`). */
  json?: z.ZodType;
  /** Bodies of other media types, each with its JSON Schema. */
  media?: Record<string, JsonSchema>;
  /** Headers beyond those the builder adds. */
  headers?: ResponseHeader[];
}

export interface OperationSpec {
  method: HttpMethod;
  /** The path with `{param}` placeholders, as `createApi().endpoints()` lists it. */
  path: string;
  operationId: string;
  tag: Tag;
  summary: string;
  description?: string;
  /** `public`: no token; `bearer`: `Authorization: Bearer`; `events`: a bearer token or `?ticket=`. */
  auth: 'public' | 'bearer' | 'events';
  /** What each path parameter is. */
  params?: Record<string, string>;
  /** The query schema the route parses: one parameter per field. */
  query?: z.ZodType;
  /** `X-Tenant-ID` is required (the fleet interface). */
  tenant?: boolean;
  /** Takes `Idempotency-Key`: a replay answers the first response. */
  idempotent?: boolean;
  /** Its successes carry an `ETag`: of what, and whether every success does. */
  etag?: { of: string; always: boolean };
  /** Takes `If-Match` (what its `ETag` is of). */
  ifMatch?: string;
  body?: {
    schema: z.ZodType;
    /** Default `application/json`. */
    mediaTypes?: string[];
    description?: string;
    required?: boolean;
    /** The most bytes it may have; default MAX_BODY_BYTES (1 MiB). */
    maxBytes?: number;
  };
  /** Successes and other non-error answers, by status. */
  responses: Record<number, ResponseSpec>;
  /** Error statuses this operation answers with, and when (the builder adds the shared ones). */
  errors: Record<number, string>;
}
