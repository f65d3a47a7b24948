/** @module `GET /v1/openapi.json`: the OpenAPI document, built once on first request; no token needed. */
import Router from '@koa/router';
import { buildOpenApiDocument, serializeDocument } from './document';

export function openApiRoutes(): Router {
  const router = new Router();
  let text: string | undefined;
  router.get('/v1/openapi.json', function getOpenApiDocument(ctx) {
    text ??= serializeDocument(buildOpenApiDocument());
    ctx.type = 'application/json; charset=utf-8';
    ctx.body = text;
  });
  return router;
}
