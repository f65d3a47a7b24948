/**
 * The OpenAPI document (api/openapi/, from shared/api/) stays true: an independent validator accepts it, it
 * describes exactly the operations the server serves, the server serves it without a token, the
 * copy in docs/ is what the code builds, and the response check every end-to-end test runs
 * (test/helpers/openapi.ts) refuses what the document does not say.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { buildApiDocument, serializeDocument } from '../../api/operations';
import { ERROR_CODES, FLEET_ERRORS } from '../../shared/api/errors';
import { TETHER_VERSION } from '../../shared/version';
import { detachedApi } from '../helpers/api';
import { client } from '../helpers/http';
import { createResponseChecker } from '../helpers/openapi';
import { startStack } from '../helpers/stack';

const doc = buildApiDocument();
const operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`));

describe('the OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document (an independent validator says so)', async () => {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(doc.info.version).toBe(TETHER_VERSION);
  });

  it('describes exactly the operations the server serves', async () => {
    const { api, close } = await detachedApi();
    try {
      const served = new Set(api.endpoints());
      expect(served.has('GET /v1/openapi.json')).toBe(true);
      expect([...operations].sort()).toEqual([...served].sort());
    } finally {
      await close();
    }
  });

  it('gives every operation a unique operationId, a tag, a summary and an error response', () => {
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    expect(new Set(ids).size).toBe(ids.length);
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item)) {
        expect(op.tags, op.operationId).toHaveLength(1);
        expect(op.summary, op.operationId).toBeTruthy();
        expect(
          Object.keys(op.responses).some((status) => Number(status) >= 500),
          op.operationId,
        ).toBe(true);
      }
    }
  });

  it('names every error code of both dialects', () => {
    const text = JSON.stringify(doc.components.schemas);
    for (const code of [...Object.keys(ERROR_CODES), ...Object.keys(FLEET_ERRORS)]) expect(text).toContain(`"${code}"`);
  });

  it('is in docs/openapi.json as the code builds it (npm run build writes it)', () => {
    const checkedIn = readFileSync(resolve(__dirname, '..', '..', 'docs', 'openapi.json'), 'utf8');
    expect(checkedIn === serializeDocument(doc), 'docs/openapi.json is stale: run npm run build').toBe(true);
  });

  it('is served at GET /v1/openapi.json without a token', async () => {
    const stack = await startStack();
    try {
      const res = await client(stack.url).get('/v1/openapi.json');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(res.text).toBe(serializeDocument(doc));
    } finally {
      await stack.stop();
    }
  });
});

describe('the response check of the end-to-end tests', () => {
  const checker = createResponseChecker(doc);
  const headers = (more: Record<string, string> = {}) => new Headers({ 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r-1', ...more });
  const me = { username: 'ann', role: 'developer', kind: 'human', scopes: ['*'], tenants: [], token_id: 'tok_1', expires_at: null };
  const check = (method: string, path: string, status: number, body: unknown, h = headers()) =>
    checker.checkResponse({ method, path, status, headers: h, text: typeof body === 'string' ? body : JSON.stringify(body) });

  it('passes a response as documented', () => {
    expect(() => check('GET', '/v1/me', 200, { status: 200, data: me })).not.toThrow();
    expect(() => check('GET', '/v1/devices/dev-1?x=1', 404, { error: 'not_found', message: 'no device dev-1', status: 404 })).not.toThrow();
    expect(() => check('GET', '/v1/nope', 404, { error: 'not_found', message: 'no such endpoint', status: 404 })).not.toThrow();
  });

  it('refuses a field the document does not have', () => {
    expect(() => check('GET', '/v1/me', 200, { status: 200, data: { ...me, secret: 1 } })).toThrow(
      /getMe \(GET \/v1\/me\) answered 200[\s\S]*additionalProperty/,
    );
  });

  it('refuses a status the operation does not document', () => {
    expect(() => check('GET', '/v1/me', 404, { error: 'not_found', message: 'x', status: 404 })).toThrow(/status 404 is not documented/);
  });

  it('refuses an error code of another status, and the other dialect on fleet paths', () => {
    expect(() => check('GET', '/v1/devices/x', 404, { error: 'conflict', message: 'x', status: 404 })).toThrow(/body: \/error/);
    expect(() => check('GET', '/v1/fleet/groups', 401, { error: 'unauthorized', message: 'x', status: 401 })).toThrow(/listFleetGroups/);
  });

  it('refuses an undeclared content type and a missing required header', () => {
    expect(() => check('GET', '/v1/me', 200, { status: 200, data: me }, headers({ 'content-type': 'text/plain' }))).toThrow(/content type text\/plain/);
    const without = headers();
    without.delete('x-request-id');
    expect(() => check('GET', '/v1/me', 200, { status: 200, data: me }, without)).toThrow(/header X-Request-ID is missing/);
  });

  it('refuses a success on a path the document does not know', () => {
    expect(() => check('GET', '/v1/secret-admin', 200, { status: 200, data: {} })).toThrow(/no operation/);
  });
});
