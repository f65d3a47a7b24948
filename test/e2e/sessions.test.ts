/**
 * Remote-access sessions end to end, with real agent processes: seed tables 3.1, 5 (rules 4–6),
 * 7.1 and 8, and the contract's check order, racing opens and the audit log.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http';
import type { Proc } from '../helpers/processes';
import { startStack, type Stack } from '../helpers/stack';
import { execOnStore } from '../helpers/store';
import { connectStream } from '../helpers/stream';

let stack: Stack;
let agentA: Proc;
let dev: Client; // developer
let pe: Client; // platform-engineer
let devOther: Client; // another developer

beforeAll(async () => {
  stack = await startStack();
  [{ agent: agentA }] = await Promise.all([stack.onlineDevice('dev-a'), stack.onlineDevice('dev-b')]);
  await stack.addDevice('dev-offline');
  dev = stack.as(await stack.userToken('dana@example.com', 'developer'));
  devOther = stack.as(await stack.userToken('omar@example.com', 'developer'));
  pe = stack.as(await stack.userToken('pete@example.com', 'platform-engineer'));
});
afterAll(() => stack.stop());

const open = (c: Client, body: Record<string, unknown>) => c.post('/v1/remote-access/sessions', body);

describe('opening a session', () => {
  it('answers 201 with the full record and a websocket_url, and audits it', async () => {
    const res = await open(dev, { device_id: 'dev-a', protocol: 'diagnostics' });
    expect(res.status).toBe(201);
    const s = res.body.data;
    expect(res.body.status).toBe(201);
    expect(s).toMatchObject({
      session_id: expect.stringMatching(/^sess-[a-z2-7]{20}$/),
      device_id: 'dev-a',
      protocol: 'diagnostics',
      status: 'open',
      ttl_seconds: 3600,
      opened_by: 'dana@example.com',
      closed_at: null,
      close_reason: null,
      bytes_to_device: 0,
      bytes_from_device: 0,
      trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(Date.parse(s.expires_at) - Date.parse(s.opened_at)).toBe(3600_000);
    expect(s.websocket_url).toMatch(
      new RegExp(`^ws://127\\.0\\.0\\.1:${stack.port}/v1/remote-access/sessions/${s.session_id}/stream\\?ticket=[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{43}$`),
    );
    const audit = await stack.admin.get(`/v1/audit/remote-access?session_id=${s.session_id}`);
    expect(audit.body.data).toEqual([
      {
        id: expect.any(Number),
        event: 'session.opened',
        session_id: s.session_id,
        device_id: 'dev-a',
        protocol: 'diagnostics',
        actor: 'dana@example.com',
        reason: null,
        at: s.opened_at,
        trace_id: s.trace_id,
      },
    ]);
    // the agent hears of it
    await agentA.waitForLine(new RegExp(`"session opened".*${s.session_id}`));
    expect((await dev.del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(200);
  });

  it.each([
    [{ protocol: 'diagnostics' }, ['device_id']],
    [{ device_id: 'dev-a' }, ['protocol']],
    [{ device_id: 'dev-a', protocol: 'telnet' }, ['protocol']],
    [{ device_id: 'dev-a', protocol: 'diagnostics', ttl_seconds: 59 }, ['ttl_seconds']],
    [{ device_id: 'dev-a', protocol: 'diagnostics', ttl_seconds: 28801 }, ['ttl_seconds']],
    [{ device_id: 'dev-a', protocol: 'diagnostics', ttl_seconds: 600.5 }, ['ttl_seconds']],
    [{ device_id: 'dev-a', protocol: 'diagnostics', ttl_seconds: '600' }, ['ttl_seconds']],
    [{ device_id: 'dev-a', protocol: 'diagnostics', colour: 'red' }, ['colour']],
    [{ device_id: 7, protocol: 'diagnostics' }, ['device_id']],
  ])('400 bad_request for %j', async (body, paths) => {
    const res = await open(dev, body);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: 'bad_request', status: 400 });
    expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(paths);
  });

  it('400 for malformed JSON', async () => {
    const res = await dev.raw('POST', '/v1/remote-access/sessions', '{"device_id":', { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('bad_request');
    expect(res.text).not.toMatch(/at .*\.(ts|js):\d+/); // no stack trace
  });

  it('413 for a body over 1 MiB', async () => {
    const res = await open(dev, { device_id: 'dev-a', protocol: 'diagnostics', pad: 'x'.repeat(1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
  });

  it.each([
    [60, 201],
    [28800, 201],
  ])('accepts ttl_seconds %i at the bounds', async (ttl, status) => {
    const res = await open(dev, { device_id: 'dev-b', protocol: 'diagnostics', ttl_seconds: ttl });
    expect(res.status).toBe(status);
    expect(Date.parse(res.body.data.expires_at) - Date.parse(res.body.data.opened_at)).toBe(ttl * 1000);
    await dev.del(`/v1/remote-access/sessions/${res.body.data.session_id}`);
  });

  it("403 below the protocol's minimum role, naming the role", async () => {
    const shell = await open(dev, { device_id: 'dev-a', protocol: 'shell' });
    expect(shell.status).toBe(403);
    expect(shell.body).toMatchObject({ error: 'forbidden', status: 403 });
    expect(shell.body.message).toContain('platform-engineer');
    const ft = await open(pe, { device_id: 'dev-a', protocol: 'file-transfer' });
    expect(ft.status).toBe(403);
    expect(ft.body.message).toContain('administrator');
    const ok = await open(pe, { device_id: 'dev-a', protocol: 'shell' });
    expect(ok.status).toBe(201);
    await pe.del(`/v1/remote-access/sessions/${ok.body.data.session_id}`);
    const adminFt = await open(stack.admin, { device_id: 'dev-a', protocol: 'file-transfer' });
    expect(adminFt.status).toBe(201);
    await stack.admin.del(`/v1/remote-access/sessions/${adminFt.body.data.session_id}`);
  });

  it('404 for an unknown device, 422 when its agent is offline', async () => {
    const unknown = await open(dev, { device_id: 'no-such-device', protocol: 'diagnostics' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toBe('not_found');
    const offline = await open(dev, { device_id: 'dev-offline', protocol: 'diagnostics' });
    expect(offline.status).toBe(422);
    expect(offline.body).toMatchObject({ error: 'unprocessable_entity', status: 422 });
    expect(offline.body.message).toContain('offline');
  });

  it('checks run in the contract order: 400, 403, 404, 422, 409', async () => {
    // invalid body and role too low: 400 wins
    expect((await open(dev, { device_id: 'no-such-device', protocol: 'shell', ttl_seconds: 1 })).status).toBe(400);
    // role too low and unknown device: 403 wins
    expect((await open(dev, { device_id: 'no-such-device', protocol: 'shell' })).status).toBe(403);
    // offline and already open cannot both hold; unknown beats offline
    expect((await open(pe, { device_id: 'no-such-device', protocol: 'shell' })).status).toBe(404);
    expect((await open(pe, { device_id: 'dev-offline', protocol: 'shell' })).status).toBe(422);
  });

  it('one session per protocol per device: 409, other protocols and devices are free', async () => {
    const first = await open(pe, { device_id: 'dev-a', protocol: 'shell' });
    expect(first.status).toBe(201);
    const second = await open(pe, { device_id: 'dev-a', protocol: 'shell' });
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({ error: 'conflict', status: 409 });
    const other = await open(pe, { device_id: 'dev-a', protocol: 'diagnostics' });
    expect(other.status).toBe(201);
    const otherDevice = await open(pe, { device_id: 'dev-b', protocol: 'shell' });
    expect(otherDevice.status).toBe(201);
    for (const r of [first, other, otherDevice]) await pe.del(`/v1/remote-access/sessions/${r.body.data.session_id}`);
    // once closed, the protocol is free again
    const again = await open(pe, { device_id: 'dev-a', protocol: 'shell' });
    expect(again.status).toBe(201);
    await pe.del(`/v1/remote-access/sessions/${again.body.data.session_id}`);
  });

  it('a 409 names who holds the session and since when (and nothing more), in words and as `holder`', async () => {
    const first = (await open(pe, { device_id: 'dev-a', protocol: 'shell' })).body.data;
    for (const other of [stack.admin, pe]) {
      const second = await open(other, { device_id: 'dev-a', protocol: 'shell' });
      expect(second.status).toBe(409);
      expect(second.body).toEqual({
        error: 'conflict',
        status: 409,
        message: expect.stringContaining(`pete@example.com opened it at ${first.opened_at}`),
        holder: { opened_by: 'pete@example.com', opened_at: first.opened_at },
      });
      expect(second.body.message).not.toContain(first.session_id);
    }
    await pe.del(`/v1/remote-access/sessions/${first.session_id}`);
  });

  it('racing opens give exactly one 201', async () => {
    const users = await Promise.all(Array.from({ length: 8 }, async (_, i) => stack.as(await stack.userToken(`racer-${i}`, 'developer'))));
    const results = await Promise.all(users.map((u) => open(u, { device_id: 'dev-b', protocol: 'diagnostics' })));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    const winner = results.find((r) => r.status === 201)!;
    await stack.admin.del(`/v1/remote-access/sessions/${winner.body.data.session_id}`);
  });
});

describe('reading and closing sessions', () => {
  it('get returns status, byte counters and trace id; others see 404', async () => {
    const s = (await open(dev, { device_id: 'dev-a', protocol: 'diagnostics' })).body.data;
    const got = await dev.get(`/v1/remote-access/sessions/${s.session_id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ status: 200, data: s });
    // another developer and a platform-engineer may not see it; an administrator may
    expect((await devOther.get(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(404);
    expect((await pe.get(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(404);
    // an administrator gets a ticket of its own (bound to its token), to the same stream
    const asAdmin = await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`);
    expect(asAdmin.body.data.websocket_url.split('?')[0]).toBe(s.websocket_url.split('?')[0]);
    expect(asAdmin.body.data.websocket_url).not.toBe(s.websocket_url);
    // closing another user's session needs administrator; others get 404
    expect((await devOther.del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(404);
    expect((await dev.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.status).toBe('open');
    const closed = await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect(closed.status).toBe(200);
    expect(closed.body.data).toMatchObject({ status: 'closed', close_reason: 'closed', closed_at: expect.any(String) });
    const audit = await stack.admin.get(`/v1/audit/remote-access?session_id=${s.session_id}&event=session.closed`);
    expect(audit.body.data).toEqual([expect.objectContaining({ actor: 'admin', reason: 'closed' })]);
  });

  it('closing tells the agent, which ends the session within 5 s', async () => {
    const s = (await open(dev, { device_id: 'dev-a', protocol: 'diagnostics' })).body.data;
    await agentA.waitForLine(new RegExp(`"session opened".*${s.session_id}`));
    const res = await dev.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe('closed');
    await agentA.waitForLine(new RegExp(`"session ended".*${s.session_id}.*"reason":"closed"`), 5000);
  });

  it('closing a closed or unknown session is 404', async () => {
    const s = (await open(dev, { device_id: 'dev-a', protocol: 'diagnostics' })).body.data;
    expect((await dev.del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(200);
    const again = await dev.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ error: 'not_found', status: 404 });
    expect((await dev.del('/v1/remote-access/sessions/sess-aaaaaaaaaaaaaaaaaaaa')).status).toBe(404);
    expect((await dev.get('/v1/remote-access/sessions/sess-aaaaaaaaaaaaaaaaaaaa')).status).toBe(404);
    expect((await stack.admin.get(`/v1/audit/remote-access?session_id=${s.session_id}&event=session.closed`)).body.meta.total).toBe(1);
  });

  it('lists own sessions for developers, all for administrators, with filters and paging', async () => {
    const mine = [];
    for (const device of ['dev-a', 'dev-b']) {
      const s = (await open(devOther, { device_id: device, protocol: 'diagnostics', ttl_seconds: 60 })).body.data;
      mine.push(s);
    }
    await devOther.del(`/v1/remote-access/sessions/${mine[0].session_id}`);
    const own = await devOther.get('/v1/remote-access/sessions');
    expect(own.status).toBe(200);
    expect(own.body.data.every((s: { opened_by: string }) => s.opened_by === 'omar@example.com')).toBe(true);
    expect(own.body.data.map((s: { session_id: string }) => s.session_id).slice(0, 2)).toEqual([mine[1].session_id, mine[0].session_id]);
    expect(own.body.meta).toEqual({ page: 1, per_page: 50, total: own.body.data.length });

    const openOnly = await devOther.get('/v1/remote-access/sessions?status=open&device_id=dev-b&protocol=diagnostics');
    expect(openOnly.body.data.map((s: { session_id: string }) => s.session_id)).toEqual([mine[1].session_id]);

    const since = await devOther.get(`/v1/remote-access/sessions?since=${encodeURIComponent(mine[0].opened_at)}`);
    expect(since.body.data.map((s: { session_id: string }) => s.session_id)).toEqual([mine[1].session_id]);

    const all = await stack.admin.get('/v1/remote-access/sessions?per_page=200');
    const owners = new Set(all.body.data.map((s: { opened_by: string }) => s.opened_by));
    expect(owners.has('dana@example.com') && owners.has('omar@example.com')).toBe(true);

    const page2 = await stack.admin.get('/v1/remote-access/sessions?per_page=1&page=2');
    expect(page2.body.data).toHaveLength(1);
    expect(page2.body.data[0].session_id).toBe(all.body.data[1].session_id);
    expect(page2.body.meta).toEqual({ page: 2, per_page: 1, total: all.body.meta.total });
    const past = await stack.admin.get('/v1/remote-access/sessions?page=100000');
    expect(past.body.data).toEqual([]);
    await devOther.del(`/v1/remote-access/sessions/${mine[1].session_id}`);
  });

  it.each([
    'per_page=0',
    'per_page=201',
    'page=0',
    'page=-1',
    'page=abc',
    'status=half-open',
    'protocol=ftp',
    'since=yesterday',
    'colour=red',
    'page=1&page=2',
  ])('400 for the list query %s', async (query) => {
    const res = await dev.get(`/v1/remote-access/sessions?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toBe('bad_request');
    expect(res.body.details.length).toBeGreaterThan(0);
  });

  it("the audit log shows non-administrators only their own sessions' events", async () => {
    const s = (await open(dev, { device_id: 'dev-a', protocol: 'diagnostics' })).body.data;
    await dev.del(`/v1/remote-access/sessions/${s.session_id}`);
    const own = await devOther.get(`/v1/audit/remote-access?session_id=${s.session_id}`);
    expect(own.body.data).toEqual([]);
    const hers = await dev.get(`/v1/audit/remote-access?session_id=${s.session_id}`);
    expect(hers.body.data.map((e: { event: string }) => e.event)).toEqual(['session.closed', 'session.opened']);
    const byActor = await stack.admin.get('/v1/audit/remote-access?actor=dana@example.com&event=session.opened&per_page=1');
    expect(byActor.body.data[0]).toMatchObject({ actor: 'dana@example.com', event: 'session.opened' });
    expect((await dev.get('/v1/audit/remote-access?event=session.renamed')).status).toBe(400);
  });
});

describe('who may drive a stream: tickets and joins', () => {
  const tokenFor = async (username: string, scopes: string[]) =>
    (await stack.admin.post('/v1/tokens', { username, scopes })).body.data as { token: string; token_id: string };
  const ticketOf = (url: string) => new URL(url).searchParams.get('ticket')!;

  it('a sessions:read token sees records without websocket_url; a sessions:write token gets a ticket of its own', async () => {
    const s = (await open(pe, { device_id: 'dev-b', protocol: 'diagnostics' })).body.data;
    const adminRead = stack.as((await tokenFor('admin', ['sessions:read'])).token);
    const ownerRead = stack.as((await tokenFor('pete@example.com', ['sessions:read'])).token);
    for (const reader of [adminRead, ownerRead]) {
      const got = (await reader.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
      expect(got).toMatchObject({ session_id: s.session_id, status: 'open' });
      expect(got).not.toHaveProperty('websocket_url');
      const listed = (await reader.get('/v1/remote-access/sessions?status=open')).body.data;
      expect(listed.map((x: { session_id: string }) => x.session_id)).toContain(s.session_id);
      expect(listed.filter((x: object) => 'websocket_url' in x)).toEqual([]);
    }
    const writer = await tokenFor('admin', ['sessions:read', 'sessions:write']);
    const url = (await stack.as(writer.token).get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.websocket_url;
    expect(ticketOf(url).startsWith(`${writer.token_id}.`)).toBe(true);
    expect(ticketOf(s.websocket_url).startsWith(`${(await pe.get('/v1/me')).body.data.token_id}.`)).toBe(true);
    await pe.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('a closed session shows no websocket_url, to its owner or an administrator', async () => {
    const s = (await open(pe, { device_id: 'dev-b', protocol: 'diagnostics' })).body.data;
    const closed = (await pe.del(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
    expect(closed).not.toHaveProperty('websocket_url');
    for (const c of [pe, stack.admin]) {
      const got = (await c.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
      expect(got).toMatchObject({ status: 'closed' });
      expect(got).not.toHaveProperty('websocket_url');
    }
    const listed = (await stack.admin.get('/v1/remote-access/sessions?status=closed&per_page=200')).body.data;
    expect(listed.filter((x: object) => 'websocket_url' in x)).toEqual([]);
  });

  it("an administrator joining another user's session is audited session.joined, by ticket and by bearer; the owner's joins are not", async () => {
    const s = (await open(pe, { device_id: 'dev-b', protocol: 'diagnostics' })).body.data;
    const join = async (url: string, headers: Record<string, string> = {}) => {
      const client = connectStream(url, headers);
      await client.opened;
      expect((await client.request('system.info')).ok).toBe(true);
      client.ws.close();
      await client.closed;
    };
    await join(s.websocket_url); // the owner, with the ticket of the open
    const writer = await tokenFor('admin', ['sessions:read', 'sessions:write']);
    await join((await stack.as(writer.token).get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.websocket_url);
    const adminTokenId = (await stack.admin.get('/v1/me')).body.data.token_id;
    await join(s.websocket_url.split('?')[0], { authorization: `Bearer ${stack.adminToken}` });

    const joined = await stack.admin.get(`/v1/audit/remote-access?event=session.joined&session_id=${s.session_id}`);
    expect(joined.status).toBe(200);
    expect(joined.body.data.map((e: { event: string; actor: string; reason: string }) => [e.event, e.actor, e.reason])).toEqual([
      ['session.joined', 'admin', adminTokenId],
      ['session.joined', 'admin', writer.token_id],
    ]);
    expect(joined.body.data[0]).toMatchObject({ session_id: s.session_id, device_id: 'dev-b', protocol: 'diagnostics', trace_id: s.trace_id });
    // the owner sees who joined the session
    const seen = (await pe.get(`/v1/audit/remote-access?session_id=${s.session_id}&event=session.joined`)).body.data;
    expect(seen.map((e: { actor: string }) => e.actor)).toEqual(['admin', 'admin']);
    await pe.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it("a ticket admits no one once the token it was shown to is revoked; the owner's ticket still works", async () => {
    const s = (await open(pe, { device_id: 'dev-b', protocol: 'diagnostics' })).body.data;
    const writer = await tokenFor('admin', ['sessions:read', 'sessions:write']);
    const url = (await stack.as(writer.token).get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.websocket_url;
    expect((await stack.admin.del(`/v1/tokens/${writer.token_id}`)).status).toBe(200);
    expect((await connectStream(url).closed).code).toBe(4004);
    // nor can a ticket be moved to another token: the MAC covers the token id
    const [, mac] = ticketOf(s.websocket_url).split('.');
    const adminTokenId = (await stack.admin.get('/v1/me')).body.data.token_id;
    expect((await connectStream(`${s.websocket_url.split('?')[0]}?ticket=${adminTokenId}.${mac}`).closed).code).toBe(4004);
    const owner = connectStream(s.websocket_url);
    await owner.opened;
    expect((await owner.request('system.info')).ok).toBe(true);
    owner.ws.close();
    await owner.closed;
    expect((await stack.admin.get(`/v1/audit/remote-access?event=session.joined&session_id=${s.session_id}`)).body.data).toEqual([]);
    await pe.del(`/v1/remote-access/sessions/${s.session_id}`);
  });
});

describe('responses', () => {
  it('echo a sane X-Request-ID and make one up otherwise', async () => {
    const sent = await dev.get('/v1/me', { 'x-request-id': 'req-12345' });
    expect(sent.headers.get('x-request-id')).toBe('req-12345');
    const made = await dev.get('/v1/me');
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const hostile = await dev.get('/v1/me', { 'x-request-id': 'x'.repeat(500) });
    expect(hostile.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const error = await dev.get('/v1/remote-access/sessions/nope', { 'x-request-id': 'req-404' });
    expect(error.headers.get('x-request-id')).toBe('req-404');
  });

  it('500 internal_error names the request id and nothing else', async () => {
    // Break the database underneath the server: the audit table disappears.
    await execOnStore(stack.dataDir, 'ALTER TABLE audit_events RENAME TO audit_events_hidden');
    try {
      const res = await open(dev, { device_id: 'dev-b', protocol: 'diagnostics' });
      expect(res.status).toBe(500);
      const requestId = res.headers.get('x-request-id');
      expect(res.body).toEqual({ error: 'internal_error', message: `internal error. Request ID: ${requestId}`, status: 500 });
      expect(stack.logs.some((l) => l.includes('"unhandled error"') && l.includes(requestId!))).toBe(true);
      // nothing half-done: the failed open left no session behind
      const list = await dev.get('/v1/remote-access/sessions?status=open&device_id=dev-b');
      expect(list.body.data).toEqual([]);
    } finally {
      await execOnStore(stack.dataDir, 'ALTER TABLE audit_events_hidden RENAME TO audit_events');
    }
  });
});
