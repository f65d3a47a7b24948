/** The error handler: errors in the contract's shape or in the fleet dialect on its paths, internals never leaked, a client that went away counted as 499, and parser rejections answered in the right shape. */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../../api/errors';
import { readJsonBody } from '../../../../api/http/body';
import { renderError } from '../../../../api/http/error-body';
import { errorHandler, parserRejection } from '../../../../api/http/error-handler';
import { requestId } from '../../../../api/http/request-id';
import { createLogger } from '../../../../shared/log';
import { createMetrics } from '../../../../shared/metrics';
import { waitFor } from '../../../helpers/wait';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('renderError', () => {
  const conflict = new ApiError('conflict', 'name taken', [{ path: 'name', message: 'taken' }]);

  it("writes every path but the fleet interface's in the contract shape", () => {
    for (const path of ['/v1/devices', '/v1/fleetx', '/fleet/v1']) {
      expect(renderError(path, conflict, 'req-1'), path).toEqual({
        status: 409,
        body: { error: 'conflict', message: 'name taken', status: 409, details: [{ path: 'name', message: 'taken' }] },
      });
    }
    expect(renderError('/x', new ApiError('not_found', 'gone'), 'req-1').body).toEqual({ error: 'not_found', message: 'gone', status: 404 });
  });

  it('adds who holds a session to a 409 that names one, and nothing to any other', () => {
    const holder = { opened_by: 'ann', opened_at: '2025-01-01T00:00:00.000Z' };
    const held = new ApiError('conflict', 'a shell session is already open', undefined, undefined, { holder });
    expect(renderError('/v1/remote-access/sessions', held, 'req-1').body).toEqual({
      error: 'conflict',
      message: 'a shell session is already open',
      status: 409,
      holder,
    });
    expect(renderError('/v1/remote-access/sessions', conflict, 'req-1').body).not.toHaveProperty('holder');
  });

  it('answers an unknown error with a 500 that names only the request id', () => {
    const { status, body } = renderError('/x', new Error('SELECT * FROM secrets'), 'req-9');
    expect(status).toBe(500);
    expect(body).toEqual({ error: 'internal_error', message: 'internal error. Request ID: req-9', status: 500 });
  });

  it("writes the errors of fleet paths in the fleet dialect, with the fleet catalogue's code and status", () => {
    for (const path of ['/v1/fleet', '/v1/fleet/groups', '/V1/Fleet/groups/g1']) {
      const { status, body } = renderError(path, conflict, 'req-2');
      expect(status, path).toBe(409); // the fleet catalogue's generic CONFLICT
      expect(body, path).toMatchObject({
        status: 'error',
        error: { code: 'CONFLICT', message: 'name taken', details: [{ path: 'name', message: 'taken' }] },
        request_id: 'req-2',
      });
    }
    // unprocessable_entity is a VALIDATION_ERROR there, a 400
    expect(renderError('/v1/fleet/groups', new ApiError('unprocessable_entity', 'no'), 'req-2').status).toBe(400);
  });

  it('writes a fleet code in its own code and an unknown error as a 500 with only the request id', () => {
    const own = renderError('/v1/fleet/groups/g1', new ApiError('GROUP_NOT_FOUND', 'no group g1'), 'req-3');
    expect(own.status).toBe(404);
    expect(own.body).toMatchObject({ status: 'error', error: { code: 'GROUP_NOT_FOUND', message: 'no group g1' } });
    expect((own.body as { error: object }).error).not.toHaveProperty('details');
    const unknown = renderError('/v1/fleet/groups', new TypeError('x is undefined'), 'req-4');
    expect(unknown.status).toBe(500);
    expect((unknown.body as { error: unknown }).error).toEqual({ code: 'INTERNAL_ERROR', message: 'internal error. Request ID: req-4' });
  });

  it('answers a fleet code on another path with a 500 naming only the request id', () => {
    const { status, body } = renderError('/v1/devices', new ApiError('GROUP_NOT_FOUND', 'no group'), 'req-5');
    expect(status).toBe(500);
    expect(body).toEqual({ error: 'internal_error', message: 'internal error. Request ID: req-5', status: 500 });
  });
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
  raw: string;
}

/** Writes `text` on a new connection and reads until the server closes it (or `end` is called). */
function exchange(port: number, text: string, onConnect?: (socket: Socket) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(text);
      onConnect?.(socket);
    });
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => resolve(received));
  });
}

function parseAnswer(raw: string): Answer {
  const [head, body = ''] = raw.split('\r\n\r\n');
  const [statusLine, ...lines] = head!.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body: JSON.parse(body), raw };
}

/** A plain request with `Connection: close`, answered in full. */
const request = async (port: number, method: string, path: string) =>
  parseAnswer(await exchange(port, `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`));

describe('errorHandler and parserRejection on a real server', () => {
  const logs: Record<string, unknown>[] = [];
  const metrics = createMetrics();
  let server: Server;
  let port: number;
  let uploadStarted: () => void = () => {};

  const logsOf = (msg: string) => logs.filter((l) => l.msg === msg);
  const requestLog = (requestIdOf: string) => logs.find((l) => l.msg === 'request' && l.request_id === requestIdOf);

  beforeAll(async () => {
    const log = createLogger({ level: 'debug', write: (line) => logs.push(JSON.parse(line) as Record<string, unknown>) });
    const requests = metrics.counter('test_requests_total', 'requests');
    const router = new Router();
    for (const prefix of ['', '/v1/fleet']) {
      router.get(`${prefix}/things/:id`, (ctx) => {
        ctx.body = { id: ctx.params.id };
      });
      router.get(`${prefix}/conflict`, () => {
        throw new ApiError('conflict', 'name taken', [{ path: 'name', message: 'taken' }]);
      });
      router.get(`${prefix}/limited`, () => {
        throw new ApiError('rate_limited', 'rate limit exceeded; retry in 17 s', undefined, { 'Retry-After': '17' });
      });
      router.get(`${prefix}/boom`, function failingHandler() {
        throw new Error('password=hunter2 in the connection string');
      });
      router.post(`${prefix}/upload`, async (ctx) => {
        uploadStarted();
        ctx.body = { got: await readJsonBody(ctx) };
      });
    }
    router.get('/v1/fleet/groups/:id', (ctx) => {
      throw new ApiError('GROUP_NOT_FOUND', `no group ${ctx.params.id}`);
    });
    router.get('/misplaced', () => {
      throw new ApiError('GROUP_NOT_FOUND', 'a fleet error outside the fleet interface');
    });
    const app = new Koa();
    app.silent = true;
    app.use(requestId());
    app.use(errorHandler(log, requests));
    app.use(router.routes());
    // As the server does: slow clients cut off, parser errors answered by parserRejection.
    server = createServer({ headersTimeout: 300, requestTimeout: 300, connectionsCheckingInterval: 100 }, app.callback());
    server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
      if (socket.writable) socket.end(parserRejection(err));
      else socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  describe('errors thrown by handlers', () => {
    it('renders an ApiError in the contract shape with its details, and logs no error', async () => {
      const a = await request(port, 'GET', '/conflict');
      expect(a.status).toBe(409);
      expect(a.body).toEqual({ error: 'conflict', message: 'name taken', status: 409, details: [{ path: 'name', message: 'taken' }] });
      expect(a.headers['x-request-id']).toMatch(UUID);
      expect(requestLog(a.headers['x-request-id']!)).toMatchObject({ level: 'info', method: 'GET', route: '/conflict', status: 409 });
      expect(logsOf('unhandled error')).toEqual([]);
    });

    it('renders the same error in the fleet envelope on a fleet path', async () => {
      const a = await request(port, 'GET', '/v1/fleet/conflict');
      expect(a.status).toBe(409);
      expect(a.body).toMatchObject({
        status: 'error',
        error: { code: 'CONFLICT', message: 'name taken', details: [{ path: 'name', message: 'taken' }] },
        request_id: a.headers['x-request-id'],
      });
      expect(Date.parse(a.body.timestamp as string)).not.toBeNaN();
    });

    it('answers a fleet code as it says', async () => {
      const a = await request(port, 'GET', '/v1/fleet/groups/g7');
      expect(a.status).toBe(404);
      expect(a.body.error).toEqual({ code: 'GROUP_NOT_FOUND', message: 'no group g7' });
      expect(logsOf('unhandled error')).toEqual([]);
    });

    it('carries the headers of an ApiError, such as Retry-After, on both shapes', async () => {
      const plain = await request(port, 'GET', '/limited');
      expect(plain.status).toBe(429);
      expect(plain.headers['retry-after']).toBe('17');
      expect(plain.body).toMatchObject({ error: 'rate_limited', status: 429 });
      const fleet = await request(port, 'GET', '/v1/fleet/limited');
      expect(fleet.status).toBe(429);
      expect(fleet.headers['retry-after']).toBe('17');
      expect(fleet.body.error).toMatchObject({ code: 'RATE_LIMITED' });
    });

    it('answers an unknown error with a 500 naming only the request id, and logs it with its stack', async () => {
      const a = await request(port, 'GET', '/boom');
      const id = a.headers['x-request-id']!;
      expect(a.status).toBe(500);
      expect(a.body).toEqual({ error: 'internal_error', message: `internal error. Request ID: ${id}`, status: 500 });
      expect(a.raw).not.toContain('hunter2');
      const logged = logsOf('unhandled error').find((l) => l.request_id === id);
      expect(logged).toMatchObject({ level: 'error', err: { name: 'Error', message: 'password=hunter2 in the connection string' } });
      expect((logged!.err as { stack: string }).stack).toContain('failingHandler');
      expect(requestLog(id)).toMatchObject({ status: 500 });
    });

    it('answers a fleet code on another path with a 500, and logs it as the bug it is', async () => {
      const a = await request(port, 'GET', '/misplaced');
      const id = a.headers['x-request-id']!;
      expect(a.status).toBe(500);
      expect(a.body).toEqual({ error: 'internal_error', message: `internal error. Request ID: ${id}`, status: 500 });
      expect(logsOf('an error of another interface reached this path').find((l) => l.request_id === id)).toMatchObject({
        level: 'error',
        err: { name: 'ApiError', message: 'a fleet error outside the fleet interface' },
      });
    });

    it('answers an unknown error on a fleet path with the fleet 500, naming only the request id', async () => {
      const a = await request(port, 'GET', '/v1/fleet/boom');
      const id = a.headers['x-request-id']!;
      expect(a.status).toBe(500);
      expect(a.body).toMatchObject({ status: 'error', error: { code: 'INTERNAL_ERROR', message: `internal error. Request ID: ${id}` }, request_id: id });
      expect(a.raw).not.toContain('hunter2');
      expect(logsOf('unhandled error').some((l) => l.request_id === id)).toBe(true);
    });

    it('answers a path no route matched with a 404 naming the method and path, in the shape of the path', async () => {
      const plain = await request(port, 'GET', '/nowhere');
      expect(plain.status).toBe(404);
      expect(plain.body).toEqual({ error: 'not_found', message: 'no such endpoint: GET /nowhere', status: 404 });
      const fleet = await request(port, 'DELETE', '/v1/fleet/nowhere');
      expect(fleet.status).toBe(404);
      expect(fleet.body.error).toEqual({ code: 'NOT_FOUND', message: 'no such endpoint: DELETE /v1/fleet/nowhere' });
    });
  });

  describe('the request log and metrics', () => {
    it('logs each request once with the route template, the path without its query string, and the status', async () => {
      const a = await request(port, 'GET', '/things/42?ticket=secret-ticket');
      expect(a.status).toBe(200);
      const id = a.headers['x-request-id']!;
      expect(logs.filter((l) => l.request_id === id)).toEqual([
        expect.objectContaining({ msg: 'request', route: '/things/:id', path: '/things/42', status: 200 }),
      ]);
      expect(JSON.stringify(logs)).not.toContain('secret-ticket');
    });

    it('counts requests by method, route template and status; unmatched paths share one label', async () => {
      const countOf = async (labels: string) =>
        Number((await metrics.render()).match(new RegExp(`^test_requests_total\\{${labels}\\} (\\d+)$`, 'm'))?.[1] ?? 0);
      const things = 'method="GET",route="/things/:id",status="200"';
      const unmatched = 'method="GET",route="unmatched",status="404"';
      const [thingsBefore, unmatchedBefore] = [await countOf(things), await countOf(unmatched)];
      await request(port, 'GET', '/things/1');
      await request(port, 'GET', '/things/2');
      await request(port, 'GET', '/no/such/a');
      await request(port, 'GET', '/no/such/b');
      expect(await countOf(things)).toBe(thingsBefore + 2);
      expect(await countOf(unmatched)).toBe(unmatchedBefore + 2);
      expect(await metrics.render()).not.toContain('/no/such');
    });
  });

  describe('a client that goes away mid-request', () => {
    it('is counted and logged as 499 at debug level, with no error log and nothing written', async () => {
      const errorsBefore = logsOf('unhandled error').length;
      const started = new Promise<void>((resolve) => (uploadStarted = resolve));
      const head = 'POST /upload HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"a":';
      const received = await exchange(port, head, (socket) => void started.then(() => socket.destroy()));
      expect(received).toBe('');
      const logged = await waitFor(() => logs.find((l) => l.msg === 'request' && l.route === '/upload'), 'the request log line');
      expect(logged).toMatchObject({ level: 'info', method: 'POST', status: 499 });
      expect(logs.find((l) => l.request_id === logged.request_id && l.level === 'debug')).toMatchObject({
        msg: 'the client closed the connection before its request was complete',
        code: 'ECONNRESET',
      });
      expect(logsOf('unhandled error').length).toBe(errorsBefore);
      expect(logs.some((l) => l.request_id === logged.request_id && 'err' in l)).toBe(false);
      expect(await metrics.render()).toMatch(/test_requests_total\{method="POST",route="\/upload",status="499"\} 1\n/);
    });
  });

  describe('parserRejection', () => {
    const rejected = async (text: string) => parseAnswer(await exchange(port, text));

    it('answers a malformed request line with a 400 in the contract shape and closes', async () => {
      const a = await rejected('GARBAGE\r\n\r\n');
      expect(a.raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(a.body).toEqual({ error: 'bad_request', message: 'the request is not valid HTTP/1.1', status: 400 });
      expect(a.headers['x-request-id']).toMatch(UUID);
      expect(a.headers.connection).toBe('close');
      expect(a.headers['content-type']).toBe('application/json');
      expect(Number(a.headers['content-length'])).toBe(Buffer.byteLength(a.raw.split('\r\n\r\n')[1]!));
    });

    it('writes a rejected request on a fleet path in the fleet envelope, with the id of its header', async () => {
      const a = await rejected('GET /v1/fleet/groups HTTP/1.1\r\nHost: 127.0.0.1\r\nNot a header\r\n\r\n');
      expect(a.status).toBe(400);
      expect(a.body).toMatchObject({
        status: 'error',
        error: { code: 'VALIDATION_ERROR', message: 'the request is not valid HTTP/1.1' },
        request_id: a.headers['x-request-id'],
      });
    });

    it('names headers over 16 KiB, on a plain path and on a fleet path', async () => {
      const big = `X-Big: ${'a'.repeat(20_000)}\r\n`;
      const plain = await rejected(`GET /things/1 HTTP/1.1\r\nHost: 127.0.0.1\r\n${big}\r\n`);
      expect(plain.status).toBe(400);
      expect(plain.body).toEqual({ error: 'bad_request', message: 'the request line and headers exceed 16 KiB', status: 400 });
      const fleet = await rejected(`GET /v1/fleet/groups HTTP/1.1\r\nHost: 127.0.0.1\r\n${big}\r\n`);
      expect(fleet.status).toBe(400);
      expect(fleet.body.error).toEqual({ code: 'VALIDATION_ERROR', message: 'the request line and headers exceed 16 KiB' });
    });

    it('answers a client too slow to send its headers with a 408', async () => {
      const a = await rejected('GET /things/1 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      expect(a.raw).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
      expect(a.body).toEqual({ error: 'request_timeout', message: 'the request was not received in time', status: 408 });
      expect(a.headers['x-request-id']).toMatch(UUID);
    });

    // BUG (reported, not fixed here): Node gives a timeout error no `rawPacket`, so parserRejection
    // cannot see the path and answers a slow client on a fleet path in the contract shape
    // (`{error: "request_timeout", ...}`) instead of the fleet envelope with REQUEST_TIMEOUT.
    // Remove `.fails` once the server remembers the request line of a connection that timed out.
    it.fails('answers a client too slow on a fleet path with the fleet REQUEST_TIMEOUT', async () => {
      const a = await rejected('GET /v1/fleet/groups HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
      expect(a.status).toBe(408);
      expect(a.body).toMatchObject({ status: 'error', error: { code: 'REQUEST_TIMEOUT', message: 'the request was not received in time' } });
    });
  });
});
