/**
 * Webhooks end to end (CONTRACT 10.3; docs/access.md, webhooks), with a real receiver (node:http
 * on 127.0.0.1, port 0) and a real server: a subscribed audit event is POSTed with the documented
 * headers and a signature this test checks with its own HMAC over the raw bytes received; events
 * nobody subscribed to are not sent; the secret is never answered; a receiver that fails first is
 * retried until it answers 2xx, the same bytes each time, and the deliveries log shows the attempts;
 * a delivery enqueued while the receiver is down survives a server restart; a deleted webhook gets
 * nothing more; only administrators may manage webhooks.
 */
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TETHER_VERSION } from '../../shared/version';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const SECRET = 'whsec-0123456789abcdef';

interface Received {
  headers: IncomingHttpHeaders;
  raw: Buffer;
  body: { id: string; event: string; at: string; data: Record<string, unknown>; text?: string };
}

interface Receiver {
  url: string;
  port: number;
  got: Received[];
  close(): Promise<void>;
}

const stacks: Stack[] = [];
const receivers: Receiver[] = [];
afterEach(async () => {
  for (const s of stacks.splice(0).reverse()) await s.stop();
  for (const r of receivers.splice(0)) await r.close();
});

async function stack(options: Parameters<typeof startStack>[0] = {}): Promise<Stack> {
  const s = await startStack(options);
  stacks.push(s);
  return s;
}

/** A receiver that answers the statuses of `answers` in turn, then 200; on `port` if given. */
async function receiver(answers: number[] = [], port = 0): Promise<Receiver> {
  const got: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      got.push({ headers: req.headers, raw, body: JSON.parse(raw.toString('utf8')) as Received['body'] });
      res.statusCode = answers.shift() ?? 200;
      if (res.statusCode >= 300 && res.statusCode < 400) res.setHeader('location', 'http://127.0.0.1:9/elsewhere');
      res.end(res.statusCode === 200 ? 'ok' : 'try again later');
    });
  });
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  let closed = false;
  const r: Receiver = {
    url: `http://127.0.0.1:${bound}/hooks/tether`,
    port: bound,
    got,
    async close() {
      if (closed) return;
      closed = true;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  receivers.push(r);
  return r;
}

const hmac = (raw: Buffer) => `sha256=${createHmac('sha256', SECRET).update(raw).digest('hex')}`;

async function subscribe(s: Stack, url: string, events: string[], format?: 'json' | 'slack'): Promise<string> {
  const res = await s.admin.post('/v1/webhooks', { url, events, secret: SECRET, ...(format && { format }) });
  expect(res.status).toBe(201);
  expect(res.text).not.toContain(SECRET);
  return res.body.data.webhook_id as string;
}

const deliveries = async (s: Stack, id: string, query = '') => (await s.admin.get(`/v1/webhooks/${id}/deliveries${query}`)).body;
const addUser = async (s: Stack, username: string) => expect((await s.admin.post('/v1/users', { username, role: 'developer' })).status).toBe(201);

describe('webhooks', () => {
  it('POSTs a subscribed event, signed, with its headers; sends nothing else; never answers the secret', async () => {
    const s = await stack();
    const r = await receiver();
    const id = await subscribe(s, r.url, ['user.created']);
    expect(id).toMatch(/^wh_[a-z2-7]{20}$/);
    const listed = await s.admin.get('/v1/webhooks');
    expect(listed.body.data).toEqual([
      { webhook_id: id, url: r.url, events: ['user.created'], format: 'json', created_by: 'admin', created_at: expect.any(String) },
    ]);
    expect(listed.text).not.toContain(SECRET);

    await addUser(s, 'wh-ann');
    expect((await s.admin.post('/v1/tokens', { username: 'wh-ann' })).status).toBe(201); // token.created: not subscribed
    await addUser(s, 'wh-bob');
    await waitFor(() => r.got.length >= 2, 'two deliveries');

    const first = r.got.find((g) => g.body.data.target && (g.body.data.target as { id: string }).id === 'wh-ann')!;
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.headers['user-agent']).toBe(`tether-webhooks/${TETHER_VERSION}`);
    expect(first.headers['x-tether-event']).toBe('user.created');
    expect(first.headers['x-tether-delivery']).toBe(first.body.id);
    expect(first.headers['x-tether-signature']).toBe(hmac(first.raw));
    expect(first.body).toEqual({
      id: expect.stringMatching(/^whd_/),
      event: 'user.created',
      at: expect.any(String),
      data: {
        event: 'user.created',
        actor: 'admin',
        target: { kind: 'user', id: 'wh-ann' },
        details: { role: 'developer', kind: 'human', password: false },
        outcome: 'success',
        at: first.body.at,
        trace_id: expect.any(String),
        source_ip: '127.0.0.1',
      },
    });
    const log = await waitFor(async () => {
      const page = await deliveries(s, id);
      return page.data.every((d: { status: string }) => d.status === 'delivered') && page;
    }, 'both delivered in the log');
    // The unsubscribed token.created was never enqueued: the log holds the two user events only.
    expect(log.meta.total).toBe(2);
    expect(log.data.map((d: { event: string }) => d.event)).toEqual(['user.created', 'user.created']);
    expect(log.data[1]).toMatchObject({
      delivery_id: first.body.id,
      webhook_id: id,
      attempts: 1,
      last_status_code: 200,
      last_error: null,
      next_attempt_at: null,
    });
    expect(JSON.stringify(log)).not.toContain(SECRET);
    expect(r.got.map((g) => g.body.event)).toEqual(['user.created', 'user.created']);
  });

  it('a Slack-compatible webhook gets a line of text beside the same fields, signed alike', async () => {
    const s = await stack();
    const r = await receiver();
    await subscribe(s, r.url, ['user.created'], 'slack');
    await addUser(s, 'wh-carol');
    await waitFor(() => r.got.length === 1, 'a delivery');
    const [got] = r.got;
    expect(got!.body).toMatchObject({ text: '[tether] user.created by admin: user wh-carol', event: 'user.created', data: { target: { id: 'wh-carol' } } });
    expect(got!.headers['x-tether-signature']).toBe(hmac(got!.raw));
  });

  it('retries a receiver that fails first, with the same bytes, until it answers 2xx; the log shows the attempts', async () => {
    const s = await stack();
    const r = await receiver([500, 500]);
    const id = await subscribe(s, r.url, ['user.created']);
    await addUser(s, 'wh-dave');
    const failedOnce = await waitFor(async () => {
      const [d] = (await deliveries(s, id)).data;
      return d?.attempts === 1 && d;
    }, 'the first attempt recorded');
    expect(failedOnce).toMatchObject({ status: 'pending', last_status_code: 500, last_error: 'HTTP 500: try again later' });
    expect(Date.parse(failedOnce.next_attempt_at)).toBeGreaterThan(Date.parse(failedOnce.created_at));
    await waitFor(() => r.got.length === 3, 'three attempts', 15_000);
    expect(new Set(r.got.map((g) => g.raw.toString('hex'))).size).toBe(1);
    expect(new Set(r.got.map((g) => g.headers['x-tether-signature'])).size).toBe(1);
    expect(r.got[2]!.headers['x-tether-signature']).toBe(hmac(r.got[2]!.raw));
    const done = await waitFor(async () => {
      const [d] = (await deliveries(s, id, '?status=delivered')).data;
      return d;
    }, 'delivered in the log');
    expect(done).toMatchObject({ attempts: 3, last_status_code: 200, last_error: null, next_attempt_at: null });
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toContain('tether_webhook_deliveries_total{outcome="retried"} 2');
    expect(metrics).toContain('tether_webhook_deliveries_total{outcome="delivered"} 1');
  });

  it('follows no redirect: a 3xx is retried like any answer that is not 2xx', async () => {
    const s = await stack();
    const r = await receiver([302]);
    const id = await subscribe(s, r.url, ['user.created']);
    await addUser(s, 'wh-hugo');
    const moved = await waitFor(async () => {
      const [d] = (await deliveries(s, id)).data;
      return d?.attempts === 1 && d;
    }, 'the first attempt recorded');
    expect(moved).toMatchObject({
      status: 'pending',
      last_status_code: 302,
      last_error: expect.stringContaining('redirects are not followed: http://127.0.0.1:9/elsewhere'),
    });
    await waitFor(() => r.got.length === 2, 'the retry');
    expect(r.got.map((g) => g.body.id)).toEqual([moved.delivery_id, moved.delivery_id]);
  });

  it('a delivery enqueued while the receiver is down survives a server restart and is delivered after it', async () => {
    const first = await stack();
    const down = await receiver();
    const { port, url } = down;
    await down.close(); // nothing listens there now: connections are refused
    const id = await subscribe(first, url, ['user.created']);
    await addUser(first, 'wh-erin');
    const refused = await waitFor(async () => {
      const [d] = (await deliveries(first, id)).data;
      return d?.attempts >= 1 && d;
    }, 'a refused attempt');
    expect(refused).toMatchObject({ status: 'pending', last_status_code: null, last_error: 'ECONNREFUSED' });

    await first.stopServer();
    const up = await receiver([], port);
    const second = await stack({ dataDir: first.dataDir });
    await waitFor(() => up.got.length === 1, 'the delivery after the restart', 20_000);
    expect(up.got[0]!.body).toMatchObject({ id: refused.delivery_id, event: 'user.created', data: { target: { id: 'wh-erin' } } });
    expect(up.got[0]!.headers['x-tether-signature']).toBe(hmac(up.got[0]!.raw));
    const [d] = (await waitFor(async () => (await deliveries(second, id, '?status=delivered')).data[0] && (await deliveries(second, id)), 'delivered')).data;
    expect(d.attempts).toBeGreaterThanOrEqual(2);
  });

  it('a deleted webhook gets nothing more; its log stays readable', async () => {
    const s = await stack();
    const [a, b] = [await receiver(), await receiver()];
    const ida = await subscribe(s, a.url, ['user.created']);
    await subscribe(s, b.url, ['user.created']);
    await addUser(s, 'wh-frank');
    await waitFor(() => a.got.length === 1 && b.got.length === 1, 'both delivered');
    const del = await s.admin.del(`/v1/webhooks/${ida}`);
    expect(del.status).toBe(204);
    expect((await s.admin.del(`/v1/webhooks/${ida}`)).status).toBe(404);
    expect((await s.admin.get('/v1/webhooks')).body.data.map((w: { webhook_id: string }) => w.webhook_id)).not.toContain(ida);
    await addUser(s, 'wh-grace');
    await waitFor(() => b.got.length === 2, 'the live webhook delivered');
    expect(a.got).toHaveLength(1);
    expect((await deliveries(s, ida)).meta.total).toBe(1);
    // Where audit data goes is itself audited, and the secret is in no event.
    const logged = await s.admin.get(`/v1/audit/events?event=webhook.&target=webhook:${ida}`);
    expect(logged.body.data.map((e: { event: string }) => e.event)).toEqual(['webhook.deleted', 'webhook.created']);
    expect(logged.body.data[1].details).toEqual({ url: a.url, events: ['user.created'], format: 'json' });
    expect(logged.text).not.toContain(SECRET);
  });

  it('sends the access events: a request and its approval, as JSON and as a Slack line', async () => {
    const s = await stack();
    const [json, slack] = [await receiver(), await receiver()];
    await subscribe(s, json.url, ['access_request.created', 'access_request.approved']);
    await subscribe(s, slack.url, ['access_request.created'], 'slack');
    expect((await s.admin.post('/v1/devices', { device_id: 'wh-cam-7', labels: { env: 'prod' } })).status).toBe(201);
    expect((await s.admin.post('/v1/access-policies', { name: 'prod shells', match: { labels: { env: 'prod' } }, protocols: ['shell'] })).status).toBe(201);
    const ann = s.as(await s.userToken('wh-ann-pe', 'platform-engineer'));
    const asked = await ann.post('/v1/access-requests', { device_id: 'wh-cam-7', protocols: ['shell'], reason: 'brake firmware', duration_seconds: 3600 });
    expect(asked.status).toBe(201);
    const requestId = asked.body.data.request_id as string;
    expect((await s.admin.post(`/v1/access-requests/${requestId}/approve`, { reason: 'ticket OPS-112' })).status).toBe(200);

    await waitFor(() => json.got.length === 2 && slack.got.length === 1, 'the access deliveries');
    const byEvent = new Map(json.got.map((g) => [g.body.event, g]));
    const created = byEvent.get('access_request.created')!;
    expect(created.headers['x-tether-signature']).toBe(hmac(created.raw));
    expect(created.body.data).toMatchObject({
      event: 'access_request.created',
      request_id: requestId,
      device_id: 'wh-cam-7',
      actor: 'wh-ann-pe',
      reason: 'brake firmware',
    });
    expect(byEvent.get('access_request.approved')!.body.data).toMatchObject({ request_id: requestId, actor: 'admin', reason: 'ticket OPS-112' });
    expect(slack.got[0]!.body.text).toBe('[tether] wh-ann-pe asked for shell on wh-cam-7 for 1h: brake firmware');
    expect(slack.got[0]!.headers['x-tether-signature']).toBe(hmac(slack.got[0]!.raw));
  });

  it('only administrators manage webhooks; bad input is 400', async () => {
    const s = await stack();
    const pe = s.as(await s.userToken('wh-pe', 'platform-engineer'));
    const body = { url: 'http://127.0.0.1:9/x', events: ['user.created'], secret: SECRET };
    expect((await pe.post('/v1/webhooks', body)).status).toBe(403);
    expect((await pe.get('/v1/webhooks')).status).toBe(403);
    const id = await subscribe(s, body.url, body.events);
    expect((await pe.get(`/v1/webhooks/${id}/deliveries`)).status).toBe(403);
    expect((await pe.del(`/v1/webhooks/${id}`)).status).toBe(403);
    expect((await s.admin.post('/v1/webhooks', { ...body, url: 'ftp://127.0.0.1/x' })).status).toBe(400);
    expect((await s.admin.post('/v1/webhooks', { ...body, events: ['no.such_event'] })).status).toBe(400);
    expect((await s.admin.get('/v1/webhooks/wh_nope/deliveries')).status).toBe(404);
    expect((await s.admin.del('/v1/webhooks/wh_nope')).status).toBe(404);
    const short = await s.admin.post('/v1/webhooks', { ...body, secret: 'tiny-s3cr3t' });
    expect(short.status).toBe(400);
    expect(short.text).not.toContain('tiny-s3cr3t');
  });
});
