/**
 * Hostile input that is not a field's value. Clients that give up half-way: a request whose body
 * the client cuts off (the connection closed or reset before `Content-Length` bytes arrived) is
 * the client's doing, not the server's. It must not count as a 5xx in `/metrics` nor log an error
 * with a stack: operators alert on both, and anyone could set them off at will with a raw socket.
 * Every body-reading route is tried, JSON and YAML, with a FIN and with a RST. And a server
 * process (not the in-process stack, whose runtime differs) sent deeply nested YAML again and
 * again: it used to abort on the second document.
 */
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startServerProcess } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
  const yaml = 'service:\n  name: web\n  image: registry.example.com/platform/web:1.0.0\ndeployment:\n  replicas: 1\n';
  const applied = await stack.admin.raw('POST', '/v1/services?env=dev', yaml, { 'content-type': 'application/yaml' });
  if (applied.status !== 200) throw new Error(`fixture service: ${applied.status} ${applied.text}`);
});
afterAll(() => stack.stop());

interface BodyRoute {
  method: string;
  path: string;
  /** The route template, as `/metrics` labels it. */
  route: string;
  auth: boolean;
  headers?: Record<string, string>;
  /** The first part of a body the client never finishes. */
  partial: string;
}

const ROUTES: BodyRoute[] = [
  { method: 'POST', path: '/v1/auth/token', route: '/v1/auth/token', auth: false, partial: '{"username":"admin","password":"hun' },
  { method: 'POST', path: '/v1/devices', route: '/v1/devices', auth: true, partial: '{"device_id":"cut-' },
  { method: 'POST', path: '/v1/remote-access/sessions', route: '/v1/remote-access/sessions', auth: true, partial: '{"device_id":"x","proto' },
  { method: 'PUT', path: '/v1/services/web/canary/weight?env=dev', route: '/v1/services/:serviceName/canary/weight', auth: true, partial: '{"wei' },
  {
    method: 'POST',
    path: '/v1/services?env=dev&dry_run=true',
    route: '/v1/services',
    auth: true,
    headers: { 'Content-Type': 'application/yaml' },
    partial: 'service:\n  name: web\n  ima',
  },
  { method: 'POST', path: '/v1/fleet/groups', route: '/v1/fleet/groups', auth: true, headers: { 'X-Tenant-ID': 't1' }, partial: '{"name":"Dep' },
];

/**
 * Sends the request line, headers announcing a 1000-byte body and only `partial` of it, then
 * closes the socket: with a FIN (`destroy`) or a RST (`resetAndDestroy`).
 */
function cutRequest(r: BodyRoute, requestId: string, how: 'fin' | 'rst'): Promise<void> {
  const headers: Record<string, string> = {
    Host: '127.0.0.1',
    'Content-Type': 'application/json',
    ...r.headers,
    'Content-Length': '1000',
    'X-Request-ID': requestId,
    ...(r.auth ? { Authorization: `Bearer ${stack.adminToken}` } : {}),
  };
  const head = `${r.method} ${r.path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('')}\r\n`;
  return new Promise((resolve, reject) => {
    const socket = connect(stack.port, '127.0.0.1', () => {
      socket.write(head + r.partial, () => {
        if (how === 'rst') socket.resetAndDestroy();
        else socket.destroy();
      });
    });
    socket.on('error', reject);
    socket.on('close', () => resolve());
  });
}

/** The parsed log lines of one request id. */
function linesOf(requestId: string): Array<Record<string, unknown>> {
  return stack.logs.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.request_id === requestId);
}

/** `tether_http_requests_total` for one method and route, by status. */
function countsOf(metrics: string, method: string, route: string): Record<string, number> {
  const counts: Record<string, number> = {};
  const prefix = `tether_http_requests_total{method="${method}",route="${route}",status="`;
  for (const line of metrics.split('\n')) {
    if (line.startsWith(prefix)) counts[line.slice(prefix.length, line.indexOf('"', prefix.length))] = Number(line.split(' ').pop());
  }
  return counts;
}

const total = (counts: Record<string, number>): number => Object.values(counts).reduce((a, b) => a + b, 0);

describe('a client that cuts its request body short', () => {
  for (const how of ['fin', 'rst'] as const) {
    it.each(ROUTES.map((r) => [`${r.method} ${r.route}`, r] as const))(`%s, closed with a ${how.toUpperCase()}: no 5xx, no error log`, async (_name, r) => {
      const requestId = `cut-${how}-${r.method}-${r.route}`.replace(/[^A-Za-z0-9._:-]/g, '_');
      const before = countsOf((await stack.admin.get('/metrics')).text, r.method, r.route);
      await cutRequest(r, requestId, how);

      // Accounted for: its request line is logged and /metrics counts one more for the route.
      const line = await waitFor(() => linesOf(requestId).find((l) => l.msg === 'request'), `the request line of ${requestId}`);
      const metrics = await waitFor(async () => {
        const text = (await stack.admin.get('/metrics')).text;
        return total(countsOf(text, r.method, r.route)) > total(before) && text;
      }, `/metrics to count ${requestId}`);

      expect(metrics).not.toMatch(/^tether_http_requests_total\{[^}]*status="5\d\d"\}/m);
      expect(stack.logs.filter((l) => /"level":"(error|warn)"/.test(l))).toEqual([]);
      for (const l of linesOf(requestId)) expect(JSON.stringify(l)).not.toMatch(/"stack"|\n\s+at /);
      // Counted as what it is: 499, nginx's "client closed request".
      expect(line.status, JSON.stringify(line)).toBe(499);
      expect(countsOf(metrics, r.method, r.route)['499']).toBe((before['499'] ?? 0) + 1);

      // and the server still serves, on a new connection
      expect((await stack.admin.get('/v1/me')).status).toBe(200);
    });
  }

  it('complete requests are still answered as before', async () => {
    const device = await stack.admin.post('/v1/devices', { device_id: 'cut-complete' });
    expect(device.status).toBe(201);
    const login = await stack.admin.post('/v1/auth/token', { username: 'nobody', password: 'wrong' });
    expect(login.status).toBe(401);
    expect((await stack.admin.get('/healthz')).status).toBe(200);
  });
});

describe('a server process and deeply nested YAML', () => {
  it('answers 422 every time and keeps running', async () => {
    const dataDir = tempDir();
    const server = await startServerProcess(dataDir);
    try {
      const admin = client(server.url, readFileSync(join(dataDir, 'admin.token'), 'utf8').trim());
      // The yaml library recursed until the stack ran out and caught that; the next document made
      // V8 abort the process ("RegExpCompiler Allocation failed") with every session on it.
      const deep = '['.repeat(100_000) + ']'.repeat(100_000);
      const replies = [];
      for (let i = 0; i < 5; i++) {
        const sent = admin.raw('POST', '/v1/services?env=dev&dry_run=true', deep, { 'content-type': 'application/yaml' });
        replies.push(await sent.catch((err: Error) => ({ status: 0, text: `no answer: ${err.message}`, body: undefined })));
      }
      expect(replies.map((r) => r.status)).toEqual([422, 422, 422, 422, 422]); // 0: no answer, the process is gone
      for (const r of replies) expect(r.body.details).toEqual([{ path: '(root)', message: 'nesting is limited to 32 levels', line: 1 }]);
      expect((await admin.get('/v1/me')).status).toBe(200);
      expect(server.proc.stderr.join('\n')).not.toMatch(/FATAL|"level":"error"/);
    } finally {
      await server.proc.stop();
    }
  });
});
