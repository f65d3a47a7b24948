/** The CLI's HTTP client against a real HTTP server on port 0 that answers as the API does. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiFailure, createApiClient, type ApiClient } from '../../../cli/api-client';
import { CliError } from '../../../cli/errors';

const routes: Record<string, (res: ServerResponse, req: IncomingMessage) => void> = {
  '/v1/ok': (res, req) => json(res, 200, { status: 200, data: { auth: req.headers.authorization ?? null } }),
  '/v1/missing': (res) => json(res, 404, { error: 'not_found', message: 'no device nowhere', status: 404 }),
  '/v1/invalid': (res) =>
    json(res, 400, { error: 'bad_request', message: 'invalid body', status: 400, details: [{ path: 'ttl_seconds', message: 'too big' }] }),
  '/v1/who': (res) => json(res, 401, { error: 'unauthorized', message: 'token expired', status: 401 }),
  '/v1/boom': (res) => json(res, 500, { error: 'internal_error', message: 'internal error', status: 500 }, { 'x-request-id': 'req-1' }),
  '/v1/html': (res) => {
    res.writeHead(502, { 'content-type': 'text/html' });
    res.end('<html>bad gateway</html>');
  },
  '/v1/hang': () => {}, // never answers
  '/v1/bare': (res) => {
    res.writeHead(418);
    res.end();
  },
};

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

const server = createServer((req, res) => routes[req.url ?? '']?.(res, req));
let api: ApiClient;

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  api = createApiClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token: 'tth_t', notice: () => {} });
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function failure(path: string): Promise<CliError> {
  const err = await api.request('GET', path).catch((e: unknown) => e);
  if (!(err instanceof CliError)) throw new Error(`expected a CliError, got ${String(err)}`);
  return err;
}

describe('api client', () => {
  it('sends the bearer token and resolves with the data', async () => {
    expect(await api.request('GET', '/v1/ok')).toEqual({ auth: 'Bearer tth_t' });
  });

  it("turns an API error into an ApiFailure carrying the API's code and status", async () => {
    const err = await failure('/v1/missing');
    expect(err).toBeInstanceOf(ApiFailure);
    expect(err).toMatchObject({ code: 'not_found', status: 404, message: 'no device nowhere' });
  });

  it('lists the details of a 400', async () => {
    expect(await failure('/v1/invalid')).toMatchObject({ code: 'bad_request', message: 'invalid request:\n  ttl_seconds: too big' });
  });

  it('says to log in again on a 401, and shows the request id of a 500', async () => {
    const unauthorized = await failure('/v1/who');
    expect(unauthorized).toMatchObject({ code: 'unauthorized' });
    expect(unauthorized.message).toContain('Log in again');
    // the server's own words stay apart from the advice, for a caller with better advice (login)
    expect(unauthorized).toBeInstanceOf(ApiFailure);
    expect(unauthorized).toMatchObject({ status: 401, body: { message: 'token expired' } });
    const boom = await failure('/v1/boom');
    expect(boom).toMatchObject({ code: 'internal_error' });
    expect(boom.message).toContain('request id req-1');
  });

  it('gives up on a request without an answer after timeoutMs, as unreachable', async () => {
    const impatient = createApiClient({ server: api.server, timeoutMs: 200, notice: () => {} });
    const started = Date.now();
    await expect(impatient.request('GET', '/v1/hang')).rejects.toMatchObject({ code: 'unreachable' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("names what is wrong with an answer that is not the API's, or no answer at all", async () => {
    expect(await failure('/v1/html')).toMatchObject({ code: 'bad_answer' });
    expect(await failure('/v1/bare')).toMatchObject({ code: 'unknown', status: 418, message: 'HTTP 418' });
    const unreachable = await createApiClient({ server: 'http://127.0.0.1:1' })
      .request('GET', '/v1/ok')
      .catch((e: unknown) => e);
    expect(unreachable).toMatchObject({ code: 'unreachable' });
    for (const server of ['localhost:8080', 'ftp://127.0.0.1', 'not a url']) {
      const refused = await createApiClient({ server })
        .request('GET', '/v1/ok')
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: 'unreachable', message: `cannot reach ${server}: not an http:// or https:// URL` });
    }
  });

  it("sends a JSON body with its length, and keeps a server's base path", async () => {
    const seen: Array<{ url?: string; type?: string; length?: string; body: string }> = [];
    const echo = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ url: req.url, type: req.headers['content-type'], length: req.headers['content-length'], body });
        json(res, 201, { data: { ok: true } });
      });
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/tether/`;
      expect(await createApiClient({ server: base }).request('POST', '/v1/things', { name: 'é' })).toEqual({ ok: true });
      expect(seen).toEqual([{ url: '/tether/v1/things', type: 'application/json', length: '13', body: '{"name":"é"}' }]);
    } finally {
      await new Promise<void>((r) => echo.close(() => r()));
    }
  });
});
