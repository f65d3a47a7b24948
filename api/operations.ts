/**
 * @module Every operation the API serves, from the table beside each feature's routes, and the
 * OpenAPI document built from them (`GET /v1/openapi.json`, and docs/openapi.json by
 * `npm run build`). A test holds this list to the routes `createApi()` serves.
 */
import { accessOperations } from './access-requests/openapi';
import { consoleOperations } from './console/openapi';
import { serviceOperations } from './services/openapi';
import { deviceOperations } from './devices/openapi';
import { eventOperations } from './events/openapi';
import { fleetOperations } from './fleet/openapi';
import { healthOperations } from './http/openapi';
import { identityOperations } from './identity/openapi';
import { jobOperations } from './jobs/openapi';
import { buildOpenApiDocument, type OpenApiDocument } from './openapi/document';
import type { OperationSpec } from './openapi/operation';
import { openApiOperations } from './openapi/routes';
import { recordingOperations } from './recordings/openapi';
import { sessionOperations } from './sessions/openapi';
import { webhookOperations } from './webhooks/openapi';

export const OPERATIONS: readonly OperationSpec[] = [
  ...healthOperations,
  ...consoleOperations,
  ...openApiOperations,
  ...eventOperations,
  ...identityOperations,
  ...deviceOperations,
  ...sessionOperations,
  ...recordingOperations,
  ...serviceOperations,
  ...fleetOperations,
  ...jobOperations,
  ...accessOperations,
  ...webhookOperations,
];

/** The OpenAPI 3.1 document of everything `createApi()` serves. */
export const buildApiDocument = (): OpenApiDocument => buildOpenApiDocument(OPERATIONS);

export { serializeDocument } from './openapi/document';
