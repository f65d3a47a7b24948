/**
 * Access ends with the token that granted it, and a token can only grant what it holds:
 * - a session closes (`token_expired`) when the token that opened it expires, and its ticket
 *   dies with it; a stream joined with a bearer token closes 4401 when that token expires;
 * - a token whose scopes are not `*` can do only what its scopes name, and a token can only
 *   issue tokens no broader (scopes, tenants, lifetime) than itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
  await stack.onlineDevice('tb-1');
  await stack.admin.post('/v1/users', { username: 'pat', role: 'platform-engineer' });
  await stack.admin.post('/v1/users', { username: 'robot', role: 'administrator', kind: 'service' });
});
afterAll(() => stack.stop());

/** A token for `username` that expires in `seconds`, issued by the bootstrap administrator. */
async function shortToken(username: string, seconds: number) {
  const res = await stack.admin.post('/v1/tokens', { username, ttl_seconds: seconds });
  expect(res.status).toBe(201);
  return res.body.data as { token: string; token_id: string; expires_at: string };
}

describe('a session never outlives the token that opened it', () => {
  it('its streams close and its ticket dies when the token expires; bearer streams get 4401', async () => {
    const token = await shortToken('pat', 4);
    const pat = stack.as(token.token);
    // an 8-hour shell joined with the bearer token, and a diagnostics session joined with its ticket
    const shell = (await pat.post('/v1/remote-access/sessions', { device_id: 'tb-1', protocol: 'shell', ttl_seconds: 28800 })).body.data;
    const diag = (await pat.post('/v1/remote-access/sessions', { device_id: 'tb-1', protocol: 'diagnostics', ttl_seconds: 28800 })).body.data;
    const byBearer = connectStream(shell.websocket_url.split('?')[0], { authorization: `Bearer ${token.token}` });
    const byTicket = connectStream(diag.websocket_url);
    await Promise.all([byBearer.opened, byTicket.opened]);
    expect((await byTicket.request('system.info')).ok).toBe(true);

    expect(await byBearer.closed).toEqual({ code: 4401, reason: 'token expired' });
    expect(await byTicket.closed).toEqual({ code: 4000, reason: 'session closed: the token that opened it expired' });
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(token.expires_at));
    for (const s of [shell, diag]) {
      expect((await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data).toMatchObject({
        status: 'closed',
        close_reason: 'token_expired',
      });
      const audit = (await stack.admin.get(`/v1/audit/remote-access?session_id=${s.session_id}&event=session.closed`)).body.data;
      expect(audit).toEqual([expect.objectContaining({ actor: 'system', reason: 'token_expired' })]);
      expect((await connectStream(s.websocket_url).closed).code).toBe(4000); // the ticket admits no one
    }
    expect((await pat.get('/v1/me')).status).toBe(401);
  });

  it('a bearer stream on a session opened by a lasting token closes 4401; the session stays open', async () => {
    const session = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'tb-1', protocol: 'diagnostics' })).body.data;
    const brief = await shortToken('admin', 3);
    const byBearer = connectStream(session.websocket_url.split('?')[0], { authorization: `Bearer ${brief.token}` });
    await byBearer.opened;
    expect(await byBearer.closed).toEqual({ code: 4401, reason: 'token expired' });
    expect((await stack.admin.get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.status).toBe('open');
    const again = connectStream(session.websocket_url); // the owner's ticket still works
    await again.opened;
    expect((await again.request('system.info')).ok).toBe(true);
    again.ws.close();
    await stack.admin.del(`/v1/remote-access/sessions/${session.session_id}`);
  });
});

describe('scopes bound what a token does', () => {
  it('a fleet-only administrator token can do nothing outside the fleet interface', async () => {
    const scoped = (await stack.admin.post('/v1/tokens', { username: 'admin', scopes: ['fleet:read'], tenants: ['acme'], ttl_seconds: 600 })).body.data;
    const api = stack.as(scoped.token);
    const denied = [
      await api.post('/v1/users', { username: 'evil', role: 'administrator', kind: 'service' }),
      await api.post('/v1/tokens', { username: 'admin', scopes: ['*'], tenants: ['*'] }),
      await api.post('/v1/tokens', { username: 'admin' }),
      await api.get('/v1/users'),
      await api.get('/v1/devices'),
      await api.post('/v1/devices', { device_id: 'evil-dev' }),
      await api.get('/v1/remote-access/sessions'),
      await api.post('/v1/remote-access/sessions', { device_id: 'tb-1', protocol: 'shell' }),
      await api.get('/v1/audit/remote-access'),
      await api.get('/v1/services?env=dev'),
    ];
    for (const res of denied) {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ error: 'forbidden', message: expect.stringMatching(/requires scope \S+; this token has fleet:read/) });
    }
    expect((await stack.admin.get('/v1/users')).body.data.map((u: { username: string }) => u.username)).not.toContain('evil');
    expect((await api.get('/v1/me')).body.data).toMatchObject({ scopes: ['fleet:read'], tenants: ['acme'] });
    expect((await api.get('/v1/fleet/groups', { 'x-tenant-id': 'acme' })).status).toBe(200);
    // nor can it join a stream with its bearer token
    const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'tb-1', protocol: 'diagnostics' })).body.data;
    expect((await connectStream(s.websocket_url.split('?')[0], { authorization: `Bearer ${scoped.token}` }).closed).code).toBe(4004);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('each scope opens exactly its own operations', async () => {
    const reader = stack.as((await stack.admin.post('/v1/tokens', { username: 'admin', scopes: ['devices:read', 'sessions:read'] })).body.data.token);
    expect((await reader.get('/v1/devices')).status).toBe(200);
    expect((await reader.get('/v1/devices/tb-1')).status).toBe(200);
    expect((await reader.get('/v1/remote-access/sessions')).status).toBe(200);
    expect((await reader.get('/v1/audit/remote-access')).status).toBe(200);
    expect((await reader.post('/v1/devices', { device_id: 'nope-1' })).status).toBe(403);
    expect((await reader.post('/v1/remote-access/sessions', { device_id: 'tb-1', protocol: 'diagnostics' })).status).toBe(403);
    expect((await reader.get('/v1/services?env=dev')).status).toBe(403);
    const deployer = stack.as((await stack.admin.post('/v1/tokens', { username: 'admin', scopes: ['deployments:read'] })).body.data.token);
    expect((await deployer.get('/v1/services?env=dev')).status).toBe(200);
    const spec = 'service:\n  name: x\n';
    expect((await deployer.raw('POST', '/v1/services?env=dev&dry_run=true', spec, { 'content-type': 'application/yaml' })).status).toBe(403);
  });

  it('a password login is bounded by the role alone', async () => {
    await stack.admin.post('/v1/users', { username: 'lin', role: 'developer', password: 'correct horse battery' });
    const login = await client(stack.url).post('/v1/auth/token', { username: 'lin', password: 'correct horse battery' });
    const lin = stack.as(login.body.data.token);
    expect((await lin.get('/v1/me')).body.data).toMatchObject({ scopes: ['*'], tenants: [] });
    expect((await lin.get('/v1/devices')).status).toBe(200);
    expect((await lin.post('/v1/users', { username: 'x1' })).body).toMatchObject({
      error: 'forbidden',
      message: expect.stringContaining('role administrator'),
    });
  });
});

describe('a token issues only tokens no broader than itself', () => {
  let issuer: { token: string; token_id: string; expires_at: string };
  beforeAll(async () => {
    const res = await stack.admin.post('/v1/tokens', {
      username: 'robot',
      scopes: ['identity:write', 'devices:read', 'fleet:read'],
      tenants: ['acme', 'beta'],
      ttl_seconds: 600,
    });
    issuer = res.body.data;
  });

  it('refuses broader scopes, tenants or lifetimes with 403 naming what is missing', async () => {
    const api = stack.as(issuer.token);
    const cases: Array<[object, RegExp]> = [
      [{ scopes: ['*'] }, /lacks \*/],
      [{ scopes: ['devices:write'] }, /lacks devices:write/],
      [{ tenants: ['*'] }, /lacks \*/],
      [{ tenants: ['acme', 'gamma'] }, /lacks gamma/],
      [{ ttl_seconds: 601 }, /cannot outlive/],
      [{ ttl_seconds: 3600 * 24 * 365 }, /cannot outlive/],
    ];
    for (const [extra, message] of cases) {
      const res = await api.post('/v1/tokens', { username: 'robot', ...extra });
      expect(res.status, JSON.stringify(extra)).toBe(403);
      expect(res.body).toMatchObject({ error: 'forbidden', message: expect.stringMatching(message) });
    }
  });

  it('defaults to its own scopes, no tenants and at most its own lifetime', async () => {
    const api = stack.as(issuer.token);
    const child = await api.post('/v1/tokens', { username: 'robot' });
    expect(child.status).toBe(201);
    expect(child.body.data.expires_at).toBe(issuer.expires_at); // a service token would not expire: capped
    const me = (await stack.as(child.body.data.token).get('/v1/me')).body.data;
    expect(me).toMatchObject({ scopes: ['identity:write', 'devices:read', 'fleet:read'], tenants: [] });
    // narrower is fine, and so is a human's default of 8 hours capped to the issuer's 10 minutes
    const narrow = await api.post('/v1/tokens', { username: 'pat', scopes: ['devices:read'], tenants: ['beta'], ttl_seconds: 60 });
    expect(narrow.status).toBe(201);
    const human = await api.post('/v1/tokens', { username: 'pat', scopes: ['devices:read'] });
    expect(human.body.data.expires_at).toBe(issuer.expires_at);
  });
});
