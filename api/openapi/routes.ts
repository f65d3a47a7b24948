/**
 * @module `GET /v1/openapi.json`: the OpenAPI document, built once on first request; no token
 * needed. The document is given (api/operations.ts builds it from every feature's table).
 */
import Router from '@koa/router';
import { z } from 'zod';
import { named } from '../../shared/api/common';
import { serializeDocument, type OpenApiDocument } from './document';
import type { OperationSpec } from './operation';

const openApiDocument = named(
  'OpenApiDocument',
  z.looseObject({
    openapi: z.string().regex(/^3\.1\.\d+$/),
    info: z.looseObject({ title: z.string(), version: z.string() }),
    paths: z.record(z.string(), z.unknown()),
  }),
);

export const openApiOperations: OperationSpec[] = [
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
];

export function openApiRoutes(build: () => OpenApiDocument): Router {
  const router = new Router();
  let text: string | undefined;
  router.get('/v1/openapi.json', function getOpenApiDocument(ctx) {
    text ??= serializeDocument(build());
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = text;
  });
  return router;
}
