/** Identity end to end: tokens (seed 5, rules 1–3), users, roles and `GET /v1/me`. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

describe('bearer tokens', () => {
  it.each([
    ['no header', {}],
    ['wrong scheme', { authorization: `Basic ${Buffer.from('admin:x').toString('base64')}` }],
    ['no space', { authorization: 'Bearertoken' }],
    ['two spaces', { authorization: 'Bearer  tth_abc' }],
    ['empty token', { authorization: 'Bearer ' }],
    ['unknown token', { authorization: 'Bearer tth_not-a-real-token' }],
  ])('401 unauthorized with %s', async (_name, headers) => {
    const res = await client(stack.url).get('/v1/me', headers);
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ error: 'unauthorized', status: 401 });
    expect(typeof res.body.message).toBe('string');
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers 401 on every endpoint, known or not', async () => {
    const anon = client(stack.url);
    for (const [method, path] of [
      ['GET', '/v1/devices'],
      ['GET', '/v1/remote-access/sessions'],
      ['POST', '/v1/remote-access/sessions'],
      ['DELETE', '/v1/remote-access/sessions/sess-x'],
      ['GET', '/v1/audit/remote-access'],
      ['GET', '/v1/no-such-thing'],
    ] as const) {
      expect((await anon.raw(method, path)).status, `${method} ${path}`).toBe(401);
    }
  });

  it('shows the bootstrap administrator with every scope and tenant', async () => {
    const me = await stack.admin.get('/v1/me');
    expect(me.status).toBe(200);
    expect(me.body).toEqual({
      status: 200,
      data: {
        username: 'admin',
        role: 'administrator',
        kind: 'service',
        scopes: ['*'],
        tenants: ['*'],
        token_id: expect.stringMatching(/^tok_/),
        expires_at: null,
      },
    });
  });

  it('issues 8-hour user tokens for a password', async () => {
    expect((await stack.admin.post('/v1/users', { username: 'ann@example.com', role: 'developer', password: 'correct horse' })).status).toBe(201);
    const before = Date.now();
    const login = await client(stack.url).post('/v1/auth/token', { username: 'ann@example.com', password: 'correct horse' });
    expect(login.status).toBe(200);
    const { token, token_id, expires_at } = login.body.data;
    expect(token_id).toMatch(/^tok_/);
    const lifetime = Date.parse(expires_at) - before;
    expect(lifetime).toBeGreaterThan(8 * 3600_000 - 5000);
    expect(lifetime).toBeLessThanOrEqual(8 * 3600_000 + 5000);
    const me = await stack.as(token).get('/v1/me');
    expect(me.body.data).toMatchObject({ username: 'ann@example.com', role: 'developer', kind: 'human', token_id });

    const wrong = await client(stack.url).post('/v1/auth/token', { username: 'ann@example.com', password: 'nope' });
    expect(wrong.status).toBe(401);
    const nobody = await client(stack.url).post('/v1/auth/token', { username: 'nobody', password: 'nope' });
    expect(nobody.status).toBe(401);
    expect(nobody.body.message).toBe(wrong.body.message); // existence does not leak
  });

  it('revocation takes effect on the next request', async () => {
    await stack.admin.post('/v1/users', { username: 'ci-bot', role: 'developer', kind: 'service' });
    const issued = await stack.admin.post('/v1/tokens', { username: 'ci-bot', scopes: ['fleet:read'], tenants: ['acme'] });
    expect(issued.status).toBe(201);
    expect(issued.body.data.expires_at).toBeNull(); // a service account's token does not expire unless asked
    const bot = stack.as(issued.body.data.token);
    expect((await bot.get('/v1/me')).body.data).toMatchObject({ scopes: ['fleet:read'], tenants: ['acme'] });

    expect((await stack.admin.del(`/v1/tokens/${issued.body.data.token_id}`)).status).toBe(200);
    const after = await bot.get('/v1/me');
    expect(after.status).toBe(401);
    expect(after.body.error).toBe('unauthorized');
    expect((await stack.admin.del('/v1/tokens/tok_unknown')).status).toBe(404);
  });

  it('an expired token is refused', async () => {
    await stack.admin.post('/v1/users', { username: 'short-lived', role: 'developer', kind: 'service' });
    const issued = await stack.admin.post('/v1/tokens', { username: 'short-lived', ttl_seconds: 1 });
    const t = stack.as(issued.body.data.token);
    expect((await t.get('/v1/me')).status).toBe(200);
    await waitFor(async () => (await t.get('/v1/me')).status === 401, 'the token to expire', 5000, 100);
  });

  it('a human token lives at most 8 hours', async () => {
    await stack.admin.post('/v1/users', { username: 'bob', role: 'developer' });
    const res = await stack.admin.post('/v1/tokens', { username: 'bob', ttl_seconds: 8 * 3600 + 1 });
    expect(res.status).toBe(400);
    expect(res.body.details).toEqual([{ path: 'ttl_seconds', message: expect.stringContaining('28800') }]);
    expect((await stack.admin.post('/v1/tokens', { username: 'ghost' })).status).toBe(404);
  });
});

describe('users and roles', () => {
  it('only administrators manage users, tokens and devices', async () => {
    const dev = stack.as(await stack.userToken('dev-only', 'developer'));
    for (const [path, body] of [
      ['/v1/users', { username: 'x1' }],
      ['/v1/tokens', { username: 'dev-only' }],
      ['/v1/devices', { device_id: 'd-x' }],
    ] as const) {
      const res = await dev.post(path, body);
      expect(res.status, path).toBe(403);
      expect(res.body.error).toBe('forbidden');
      expect(res.body.message).toContain('administrator');
    }
    expect((await dev.get('/v1/users')).status).toBe(403);
  });

  it('a user with no role fails every role check', async () => {
    const none = stack.as(await stack.userToken('no-role', null));
    expect((await none.get('/v1/me')).body.data.role).toBeNull();
    for (const path of ['/v1/devices', '/v1/remote-access/sessions', '/v1/audit/remote-access']) {
      const res = await none.get(path);
      expect(res.status, path).toBe(403);
      expect(res.body.error).toBe('forbidden');
    }
    const open = await none.post('/v1/remote-access/sessions', { device_id: 'x', protocol: 'diagnostics' });
    expect(open.status).toBe(403);
    expect(open.body.message).toContain('developer');
  });

  it('validates users and refuses duplicates', async () => {
    const bad = await stack.admin.post('/v1/users', { username: 'has space', role: 'king', extra: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['extra', 'role', 'username']);
    expect((await stack.admin.post('/v1/users', { username: 'dup' })).status).toBe(201);
    const dup = await stack.admin.post('/v1/users', { username: 'dup' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toBe('conflict');
    expect((await stack.admin.post('/v1/users', { username: 'system' })).status).toBe(400);
    const list = await stack.admin.get('/v1/users');
    expect(list.body.data.find((u: { username: string }) => u.username === 'dup')).toEqual({
      username: 'dup',
      role: null,
      kind: 'human',
      disabled: false,
      created_at: expect.any(String),
    });
    expect(JSON.stringify(list.body)).not.toContain('password');
  });
});
