/** Seed section 8: per-user rate limits in a sliding minute, with Retry-After. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
  await stack.onlineDevice('rl-dev');
});
afterAll(() => stack.stop());

async function burst(n: number, send: () => Promise<{ status: number }>) {
  const statuses: number[] = [];
  for (let i = 0; i < n; i++) statuses.push((await send()).status);
  return statuses;
}

describe('rate limits', () => {
  it('POST /remote-access/sessions: 30 per minute per user, whatever the outcome', async () => {
    const ann = stack.as(await stack.userToken('rl-ann', 'developer'));
    // 400s and 404s count as much as 201s and 409s
    const statuses = await burst(30, () => ann.post('/v1/remote-access/sessions', { device_id: 'rl-nowhere', protocol: 'diagnostics' }));
    expect(new Set(statuses)).toEqual(new Set([404]));
    const limited = await ann.post('/v1/remote-access/sessions', { device_id: 'rl-dev', protocol: 'diagnostics' });
    expect(limited.status).toBe(429);
    expect(limited.body).toMatchObject({ error: 'rate_limited', status: 429 });
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(limited.body.message).toContain(`${retryAfter} s`);
    // 401 comes before 429, 429 before 400
    expect((await stack.as('bad-token').post('/v1/remote-access/sessions', {})).status).toBe(401);
    expect((await ann.post('/v1/remote-access/sessions', { nonsense: true })).status).toBe(429);
    // per user: another user is not affected, and neither is another endpoint group
    const bob = stack.as(await stack.userToken('rl-bob', 'developer'));
    expect((await bob.post('/v1/remote-access/sessions', { device_id: 'rl-nowhere', protocol: 'diagnostics' })).status).toBe(404);
    expect((await ann.get('/v1/remote-access/sessions')).status).toBe(200);
  });

  it('per user, not per token: a second token of the same user shares the budget', async () => {
    await stack.admin.post('/v1/users', { username: 'rl-carl', role: 'developer', kind: 'service' });
    const t1 = (await stack.admin.post('/v1/tokens', { username: 'rl-carl' })).body.data.token;
    const t2 = (await stack.admin.post('/v1/tokens', { username: 'rl-carl' })).body.data.token;
    await burst(15, () => stack.as(t1).get('/v1/audit/remote-access'));
    const statuses = await burst(46, () => stack.as(t2).get('/v1/audit/remote-access'));
    expect(statuses.slice(0, 45).every((s) => s === 200)).toBe(true);
    expect(statuses[45]).toBe(429);
  });

  it('GET /devices: 120 per minute; GET /devices/{id} is not in the group', async () => {
    const dana = stack.as(await stack.userToken('rl-dana', 'developer'));
    const statuses = await burst(121, () => dana.get('/v1/devices?per_page=1'));
    expect(statuses.slice(0, 120).every((s) => s === 200)).toBe(true);
    expect(statuses[120]).toBe(429);
    expect((await dana.get('/v1/devices/rl-dev')).status).toBe(200);
    expect((await dana.get('/v1/devices/rl-dev/agent-status')).status).toBe(200);
  });

  it('cannot be dodged by changing headers, token formatting or the spelling of the path', async () => {
    const token = await stack.userToken('rl-mallory', 'developer');
    const mallory = stack.as(token);
    const statuses = await burst(120, () => mallory.get('/v1/devices'));
    expect(statuses.every((s) => s === 200)).toBe(true);
    const dodges: Array<[string, Record<string, string>]> = [
      ['/v1/devices', { authorization: `bearer ${token}` }],
      ['/v1/devices', { authorization: `Bearer    ${token}   ` }],
      ['/v1/devices', { 'x-forwarded-for': '203.0.113.7', 'x-real-ip': '203.0.113.7', forwarded: 'for=203.0.113.7' }],
      ['/v1/devices', { 'x-request-id': 'fresh-id-1', 'user-agent': 'another-client/1.0', 'x-tenant-id': 'other' }],
      ['/v1/devices/', {}],
      ['/V1/DEVICES', {}],
      ['/v1/Devices?per_page=1&per_page=2', {}],
      ['/v1/devices?page=1#fragment', {}],
      ['/v1/devices;x=1', {}],
      ['/v1//devices', {}],
      ['/v1/%64evices', {}],
      ['/v1/devices%2F', {}],
    ];
    for (const [path, headers] of dodges) {
      const r = await mallory.get(path, headers);
      // Whatever the server makes of the spelling, it never serves the list past the limit.
      expect([429, 404, 400], `${path} ${JSON.stringify(headers)}`).toContain(r.status);
      if (r.status !== 429) expect(Array.isArray(r.body?.data), path).toBe(false);
    }
    expect((await mallory.get('/v1/devices', { authorization: `Bearer ${token}` })).status).toBe(429);
  });

  it('failed logins: 10 per minute per username, then 429 even for the right password', async () => {
    const anon = client(stack.url);
    for (const username of ['rl-lou', 'rl-lia']) {
      expect((await stack.admin.post('/v1/users', { username, role: 'developer', password: 'right-password-1' })).status).toBe(201);
    }
    // successes never count
    for (let i = 0; i < 12; i++) expect((await anon.post('/v1/auth/token', { username: 'rl-lou', password: 'right-password-1' })).status).toBe(200);
    const wrong = await burst(10, () => anon.post('/v1/auth/token', { username: 'rl-lou', password: 'guess' }));
    expect(new Set(wrong)).toEqual(new Set([401]));
    const locked = await anon.post('/v1/auth/token', { username: 'rl-lou', password: 'right-password-1' });
    expect(locked.status).toBe(429);
    expect(locked.body).toMatchObject({ error: 'rate_limited', message: expect.stringContaining('too many failed logins') });
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // another user is not affected
    expect((await anon.post('/v1/auth/token', { username: 'rl-lia', password: 'right-password-1' })).status).toBe(200);
  });

  it('failed logins hold under concurrency: of 80 guesses at once, at most 10 are checked; the right one, late, is refused', async () => {
    const anon = client(stack.url);
    expect((await stack.admin.post('/v1/users', { username: 'rl-rex', role: 'developer', password: 'right-password-1' })).status).toBe(201);
    // Each attempt counts before its hash runs: counted only once it had failed, all 80 would be
    // checked while the first were still hashing, the right one (#60) among them.
    const replies = await Promise.all(
      Array.from({ length: 80 }, (_, i) => anon.post('/v1/auth/token', { username: 'rl-rex', password: i === 60 ? 'right-password-1' : `guess-${i}` })),
    );
    const statuses = replies.map((r) => r.status);
    const checked = statuses.filter((s) => s !== 429).length;
    expect(checked).toBeLessThanOrEqual(10);
    expect(statuses[60]).toBe(429);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    for (const r of replies.filter((x) => x.status === 429)) {
      expect(r.body).toMatchObject({ error: 'rate_limited', message: expect.stringContaining('too many failed logins') });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    expect((await anon.post('/v1/auth/token', { username: 'rl-rex', password: 'right-password-1' })).status).toBe(429);
  });

  it('password hashes in flight are bounded for the whole server: a flood of logins is refused at once beyond it', async () => {
    const anon = client(stack.url);
    expect((await stack.admin.post('/v1/users', { username: 'rl-ria', role: 'developer', password: 'right-password-1' })).status).toBe(201);
    // Another username each, so the per-username limit never applies: only the bound on hashes does.
    const replies = await Promise.all(Array.from({ length: 80 }, (_, i) => anon.post('/v1/auth/token', { username: `rl-flood-${i}`, password: 'guess' })));
    const statuses = replies.map((r) => r.status);
    const busy = replies.filter((r) => r.status === 429);
    expect(busy.length, `checked: ${statuses.filter((s) => s === 401).length}`).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    for (const r of busy) {
      expect(r.body).toMatchObject({ error: 'rate_limited', message: expect.stringContaining('checking as many passwords') });
      expect(r.headers.get('retry-after')).toBe('1');
    }
    // Refused without being checked: none of these counts as a failed login of its username.
    const refused = statuses.findIndex((s) => s === 429);
    expect((await stack.admin.post('/v1/users', { username: `rl-flood-${refused}`, role: 'developer', password: 'right-password-1' })).status).toBe(201);
    for (let n = 0; n < 9; n++) await anon.post('/v1/auth/token', { username: `rl-flood-${refused}`, password: `guess-${n}` });
    expect((await anon.post('/v1/auth/token', { username: `rl-flood-${refused}`, password: 'right-password-1' })).status).toBe(200);
    // the slots are free again once the flood is answered
    expect((await anon.post('/v1/auth/token', { username: 'rl-ria', password: 'right-password-1' })).status).toBe(200);
  });

  it('GET /audit/remote-access: 60 per minute', async () => {
    const eve = stack.as(await stack.userToken('rl-eve', 'developer'));
    const statuses = await burst(61, () => eve.get('/v1/audit/remote-access?per_page=1'));
    expect(statuses.filter((s) => s === 200)).toHaveLength(60);
    expect(statuses[60]).toBe(429);
  });
});
