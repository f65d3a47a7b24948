/**
 * Accounts that end what they should, and the audit of everything that changes who can do what
 * (docs/http-api.md, users and tokens; audit log), end to end with a real server, agent and CLI:
 * a changed password or a disabled user ends the user's tokens, sessions and streams for good
 * (enabling revives nothing), `token list` says so, `user rm` asks for --yes, and every change is
 * in `GET /v1/audit/events` / `tether audit` with its actor and target, failed logins folded and
 * never holding the password.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TABLES } from '../../api/store/schema';
import { client } from '../helpers/http';
import { runTether } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { onPostgres, queryStore } from '../helpers/store';
import { connectStream } from '../helpers/stream';

let stack: Stack;
let env: Record<string, string>;
beforeAll(async () => {
  stack = await startStack();
  await stack.onlineDevice('aud-1');
  env = { XDG_CONFIG_HOME: tempDir('tether-audit-config-'), TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken };
});
afterAll(() => stack.stop());

const tether = (args: string[], extra: Record<string, string> = {}) => runTether(args, { ...env, ...extra });
const status = async (token: string) => (await stack.as(token).get('/v1/me')).status;

interface Logged {
  token: string;
  token_id: string;
}

async function login(username: string, password: string): Promise<Logged> {
  const res = await client(stack.url).post('/v1/auth/token', { username, password });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

async function person(username: string, role: string, password = `${username} passphrase`): Promise<Logged> {
  expect((await stack.admin.post('/v1/users', { username, role, password })).status).toBe(201);
  return login(username, password);
}

/** The audit log's events matching `query`, newest first. */
async function events(query: string): Promise<any[]> {
  const res = await stack.admin.get(`/v1/audit/events?per_page=200&${query}`);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

/** A diagnostics session of `token`'s user with its stream joined by ticket. */
async function openWithStream(token: string) {
  const session = (await stack.as(token).post('/v1/remote-access/sessions', { device_id: 'aud-1', protocol: 'diagnostics' })).body.data;
  const stream = connectStream(session.websocket_url);
  await stream.opened;
  expect((await stream.request('system.info')).ok).toBe(true);
  return { session, stream };
}

/** An administrator's file-transfer session that `token` joins with its bearer token. */
async function joinedByBearer(token: string) {
  const session = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'aud-1', protocol: 'file-transfer' })).body.data;
  const stream = connectStream(session.websocket_url.split('?')[0], { authorization: `Bearer ${token}` });
  await stream.opened;
  expect((await stream.request('list', { path: '/' })).ok).toBe(true);
  return { session, stream };
}

async function closeAudit(sessionId: string) {
  return (await stack.admin.get(`/v1/audit/remote-access?session_id=${sessionId}&event=session.closed`)).body.data;
}

describe('a changed password', () => {
  it("of one's own ends every other token, their sessions and streams; the token in use stays", async () => {
    const laptop = await person('pam', 'administrator');
    const phone = await login('pam', 'pam passphrase');
    const own = await openWithStream(phone.token);
    const joined = await joinedByBearer(phone.token);

    const res = await stack.as(laptop.token).put('/v1/users/pam/password', { password: 'pam passphrase 2', current_password: 'pam passphrase' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual({ username: 'pam', tokens_revoked: 1 });
    expect(await status(phone.token)).toBe(401);
    expect(await status(laptop.token)).toBe(200);

    expect(await own.stream.closed).toEqual({ code: 4000, reason: 'session closed' });
    expect((await stack.admin.get(`/v1/remote-access/sessions/${own.session.session_id}`)).body.data).toMatchObject({
      status: 'closed',
      close_reason: 'closed',
    });
    expect(await closeAudit(own.session.session_id)).toEqual([expect.objectContaining({ actor: 'system', reason: 'token_revoked' })]);
    expect(await joined.stream.closed).toEqual({ code: 4401, reason: 'token revoked' });
    expect((await stack.admin.get(`/v1/remote-access/sessions/${joined.session.session_id}`)).body.data.status).toBe('open');
    await stack.admin.del(`/v1/remote-access/sessions/${joined.session.session_id}`);

    const [changed] = await events('event=user.password_changed&target=user:pam');
    expect(changed).toMatchObject({
      actor: 'pam',
      target: { kind: 'user', id: 'pam' },
      outcome: 'success',
      details: { by: 'self', tokens_revoked: 1, kept_token_id: laptop.token_id },
      source_ip: '127.0.0.1',
      trace_id: expect.stringMatching(/^[\da-f]{32}$/),
      count: 1,
    });
    expect(await events(`target=${phone.token_id}`)).toEqual([
      expect.objectContaining({ event: 'token.revoked', actor: 'pam', details: { username: 'pam', reason: 'user.password_changed' } }),
    ]);

    // the CLI shows the truth: the phone's token revoked, the laptop's (this one) active
    const listed = await tether(['token', 'list', '--status', 'all', '--json'], { TETHER_TOKEN: laptop.token });
    expect(listed.code, listed.stderr).toBe(0);
    const states = Object.fromEntries((JSON.parse(listed.stdout) as Array<{ token_id: string; status: string }>).map((t) => [t.token_id, t.status]));
    expect(states).toEqual({ [laptop.token_id]: 'active', [phone.token_id]: 'revoked' });
    const table = await tether(['token', 'list', '--status', 'all'], { TETHER_TOKEN: laptop.token });
    expect(table.stdout).toMatch(new RegExp(`${phone.token_id}\\s+pam\\s+\\*\\s+revoked`));
  });

  it('set by an administrator ends every token of the user; a wrong current password is audited, never stored', async () => {
    const first = await person('rex', 'developer');
    const second = await login('rex', 'rex passphrase');
    const wrong = await stack.as(first.token).put('/v1/users/rex/password', { password: 'rex passphrase 2', current_password: 'a wrong guess 123' });
    expect(wrong.status).toBe(403);
    const res = await stack.admin.put('/v1/users/rex/password', { password: 'rex passphrase 2' });
    expect(res.body.data).toEqual({ username: 'rex', tokens_revoked: 2 });
    expect([await status(first.token), await status(second.token)]).toEqual([401, 401]);
    expect((await events('event=user.password_changed&target=rex')).map((e) => [e.actor, e.outcome, e.details])).toEqual([
      ['admin', 'success', { by: 'administrator', tokens_revoked: 2, kept_token_id: null }],
      ['rex', 'failure', { reason: 'wrong_current_password' }],
    ]);
    expect((await stack.admin.put('/v1/users/rex/password', { password: 'rex passphrase 3', revoke_tokens: false })).status).toBe(400);
  });
});

describe('disabling a user', () => {
  it('revokes its tokens for good: sessions close, streams close with 4401, enabling revives none', async () => {
    const byPassword = await person('dot', 'administrator');
    const issued = (await stack.admin.post('/v1/tokens', { username: 'dot', scopes: ['sessions:read'] })).body.data;
    const own = await openWithStream(byPassword.token);
    const joined = await joinedByBearer(byPassword.token);

    const disabled = await tether(['user', 'disable', 'dot']);
    expect(disabled.code, disabled.stderr).toBe(0);
    expect([await status(byPassword.token), await status(issued.token)]).toEqual([401, 401]);
    expect(await own.stream.closed).toEqual({ code: 4000, reason: 'session closed' });
    expect(await closeAudit(own.session.session_id)).toEqual([expect.objectContaining({ reason: 'user_disabled' })]);
    expect(await joined.stream.closed).toEqual({ code: 4401, reason: 'token revoked' });
    await stack.admin.del(`/v1/remote-access/sessions/${joined.session.session_id}`);

    const listed = (await stack.admin.get('/v1/tokens?username=dot&status=all')).body.data;
    expect(listed.map((t: { status: string }) => t.status)).toEqual(['revoked', 'revoked']);
    expect((await stack.admin.get('/v1/tokens?username=dot')).body.data).toEqual([]);

    expect((await tether(['user', 'enable', 'dot'])).code).toBe(0);
    expect([await status(byPassword.token), await status(issued.token)]).toEqual([401, 401]);
    const fresh = await login('dot', 'dot passphrase');
    expect(await status(fresh.token)).toBe(200);

    const trail = await events('target=user:dot&event=user.');
    expect(trail.map((e) => [e.event, e.actor, e.details])).toEqual([
      ['user.enabled', 'admin', { tokens_revoked: 0 }],
      ['user.disabled', 'admin', { tokens_revoked: 2 }],
      ['user.created', 'admin', { role: 'administrator', kind: 'human', password: true }],
    ]);
    const revoked = await events(`event=token.revoked&target=${issued.token_id}`);
    expect(revoked).toEqual([expect.objectContaining({ actor: 'admin', details: { username: 'dot', reason: 'user.disabled' } })]);
  });
});

describe('tether user rm', () => {
  it('refuses without --yes when it cannot ask (exit 2); with --yes deletes, revokes and closes', async () => {
    const uma = await person('uma', 'developer');
    const own = await openWithStream(uma.token);
    const refused = await tether(['user', 'rm', 'uma']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--yes');
    expect(await status(uma.token)).toBe(200);

    const removed = await tether(['user', 'rm', 'uma', '--yes']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('deleted uma');
    expect(await status(uma.token)).toBe(401);
    expect(await own.stream.closed).toEqual({ code: 4000, reason: 'session closed' });
    expect(await closeAudit(own.session.session_id)).toEqual([expect.objectContaining({ reason: 'user_deleted' })]);
    expect((await stack.admin.get('/v1/tokens?username=uma&status=all')).body.data.map((t: { status: string }) => t.status)).toEqual(['revoked']);
    expect((await events('target=user:uma&event=user.deleted'))[0]).toMatchObject({ actor: 'admin', details: { tokens_revoked: 1 } });
  });
});

describe('the audit log', () => {
  const password = 'zq-Very-Secret-Passphrase-77';

  it('records logins, users, roles, tokens and devices with actor and target; failed logins fold and hold no password', async () => {
    await person('kim', 'developer', password);
    for (let n = 0; n < 3; n++) expect((await client(stack.url).post('/v1/auth/token', { username: 'kim', password: `${password}-wrong` })).status).toBe(401);
    expect((await client(stack.url).post('/v1/auth/token', { username: 'nobody-here', password })).status).toBe(401);
    expect(
      (await stack.admin.raw('PATCH', '/v1/users/kim', JSON.stringify({ role: 'platform-engineer' }), { 'content-type': 'application/json' })).status,
    ).toBe(200);
    const svc = (await stack.admin.post('/v1/tokens', { username: 'kim', ttl_seconds: 600, scopes: ['devices:read'] })).body.data;
    expect((await stack.admin.del(`/v1/tokens/${svc.token_id}`)).status).toBe(200);
    await stack.addDevice('aud-2');
    expect((await stack.admin.post('/v1/devices/aud-2/agent-token', {})).status).toBe(200);
    expect((await stack.admin.del('/v1/devices/aud-2')).status).toBe(200);

    const failed = await events('event=login.failed');
    expect(failed).toEqual([
      expect.objectContaining({ actor: 'anonymous', target: { kind: 'user', id: 'nobody-here' }, outcome: 'failure', count: 1 }),
      expect.objectContaining({
        target: { kind: 'user', id: 'kim' },
        details: { reason: 'unknown_user_or_wrong_password' },
        count: 3,
        last_at: expect.any(String),
      }),
    ]);
    expect(await events('event=login.succeeded&target=user:kim')).toEqual([
      expect.objectContaining({ actor: 'kim', outcome: 'success', details: { token_id: expect.stringMatching(/^tok_/), expires_at: expect.any(String) } }),
    ]);
    expect((await events('event=user.role_changed&target=kim'))[0]).toMatchObject({ actor: 'admin', details: { from: 'developer', to: 'platform-engineer' } });
    expect((await events(`target=token:${svc.token_id}`)).map((e) => [e.event, e.actor, e.details])).toEqual([
      ['token.revoked', 'admin', { username: 'kim', reason: 'revoked' }],
      ['token.created', 'admin', { username: 'kim', scopes: ['devices:read'], tenants: [], expires_at: svc.expires_at }],
    ]);
    expect((await events('target=aud-2')).map((e) => [e.event, e.actor, e.target.kind, e.details])).toEqual([
      ['device.deleted', 'admin', 'device', { sessions_closed: 0 }],
      ['device.token_rotated', 'admin', 'device', {}],
      ['device.created', 'admin', 'device', { labels: {} }],
    ]);
    // the first start: the administrator and its token, by the platform itself
    expect((await events('actor=system&event=user.created'))[0]).toMatchObject({ target: { kind: 'user', id: 'admin' }, source_ip: null });

    // the password (right or wrong) is nowhere in the database
    for (const table of TABLES) {
      const rows = JSON.stringify(await queryStore(stack.dataDir, `SELECT * FROM ${table}`));
      expect(rows.includes(password), table).toBe(false);
    }
    if (!onPostgres) {
      for (const file of readdirSync(stack.dataDir).filter((f) => f.startsWith('tether.db'))) {
        expect(readFileSync(join(stack.dataDir, file)).includes(password), file).toBe(false);
      }
    }
  });

  it('tether audit filters by family, actor, target and time; administrators only', async () => {
    const byFamily = await tether(['audit', '--event', 'user.', '--json', '--limit', '200']);
    expect(byFamily.code, byFamily.stderr).toBe(0);
    const listed = JSON.parse(byFamily.stdout) as Array<{ event: string; id: number }>;
    expect(listed.length).toBeGreaterThan(5);
    expect(listed.every((e) => e.event.startsWith('user.'))).toBe(true);
    expect(listed.map((e) => e.id)).toEqual([...listed.map((e) => e.id)].sort((a, b) => b - a));

    const table = await tether(['audit', '--event', 'user.', '--target', 'user:dot', '--since', '1h']);
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^AT\s+EVENT\s+ACTOR\s+TARGET\s+OUTCOME\s+FROM\s+DETAILS$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[1])).toEqual(['user.enabled', 'user.disabled', 'user.created']);
    expect((await tether(['audit', '--until', '2000-01-01'])).stdout).toBe('no events');

    const sessions = await tether(['audit', '--sessions', '--device', 'aud-1', '--event', 'session.closed', '--json']);
    expect(sessions.code, sessions.stderr).toBe(0);
    expect((JSON.parse(sessions.stdout) as Array<{ reason: string }>).map((e) => e.reason)).toEqual(
      expect.arrayContaining(['token_revoked', 'user_disabled', 'user_deleted']),
    );
    expect((await tether(['audit', '--device', 'aud-1'])).code).toBe(2);
    expect((await tether(['audit', '--since', 'yesterday'])).code).toBe(2);

    const dev = await person('val', 'developer');
    const denied = await stack.as(dev.token).get('/v1/audit/events');
    expect(denied.status).toBe(403);
    expect(denied.body.error).toBe('forbidden');
    expect((await tether(['audit'], { TETHER_TOKEN: dev.token })).code).toBe(1);
    for (const q of ['event=bogus', 'event=user', 'since=yesterday', 'per_page=0', 'until=2000-01-01&since=2001-01-01', 'extra=1']) {
      expect((await stack.admin.get(`/v1/audit/events?${q}`)).status, q).toBe(400);
    }
  });
});
