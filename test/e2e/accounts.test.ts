/**
 * Account administration end to end (docs/http-api.md, users and tokens): disabling revokes a
 * user's tokens and closes its sessions and streams at once, and enabling restores none; deleting
 * revokes them for good while the audit keeps the name; an enabled administrator always remains;
 * passwords change with the current one (or an administrator's reset); users list and revoke
 * their own tokens, and never see anyone else's.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
  await stack.onlineDevice('acc-1');
});
afterAll(() => stack.stop());

const patch = (c: Client, path: string, body: unknown) => c.raw('PATCH', path, JSON.stringify(body), { 'content-type': 'application/json' });

/** Creates a user with a password and logs it in; returns the token and its id. */
async function person(username: string, role: string | null, password = `${username} passphrase`) {
  expect((await stack.admin.post('/v1/users', { username, role, password })).status).toBe(201);
  return login(username, password);
}

async function login(username: string, password: string) {
  const res = await client(stack.url).post('/v1/auth/token', { username, password });
  expect(res.status, res.text).toBe(200);
  return res.body.data as { token: string; token_id: string };
}

const status = async (token: string) => (await stack.as(token).get('/v1/me')).status;

async function closeAudit(sessionId: string) {
  return (await stack.admin.get(`/v1/audit/remote-access?session_id=${sessionId}&event=session.closed`)).body.data;
}

describe('disabling a user', () => {
  it('cuts its tokens, sessions and ticket streams off at once; login says so only to the right password', async () => {
    const byPassword = await person('dana', 'developer');
    const issued = (await stack.admin.post('/v1/tokens', { username: 'dana', scopes: ['sessions:read'] })).body.data;
    const dana = stack.as(byPassword.token);
    // both tokens are in use (and remembered by the token cache) before the change
    expect(await status(byPassword.token)).toBe(200);
    expect(await status(issued.token)).toBe(200);
    const session = (await dana.post('/v1/remote-access/sessions', { device_id: 'acc-1', protocol: 'diagnostics' })).body.data;
    const byTicket = connectStream(session.websocket_url);
    await byTicket.opened;
    expect((await byTicket.request('system.info')).ok).toBe(true);

    const res = await patch(stack.admin, '/v1/users/dana', { disabled: true });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual({ username: 'dana', role: 'developer', kind: 'human', disabled: true, created_at: expect.any(String) });

    expect(await status(byPassword.token)).toBe(401);
    expect(await status(issued.token)).toBe(401);
    expect(await byTicket.closed).toEqual({ code: 4000, reason: 'session closed' });
    expect((await stack.admin.get(`/v1/remote-access/sessions/${session.session_id}`)).body.data).toMatchObject({
      status: 'closed',
      close_reason: 'closed',
    });
    expect(await closeAudit(session.session_id)).toEqual([expect.objectContaining({ actor: 'system', reason: 'user_disabled' })]);

    const anon = client(stack.url);
    const wrong = await anon.post('/v1/auth/token', { username: 'dana', password: 'not the passphrase' });
    expect(wrong.status).toBe(401);
    expect(wrong.body.message).toBe('unknown user or wrong password'); // a guesser learns nothing
    const right = await anon.post('/v1/auth/token', { username: 'dana', password: 'dana passphrase' });
    expect(right.status).toBe(401);
    expect(right.body).toMatchObject({ error: 'unauthorized', message: expect.stringContaining('account dana is disabled') });

    const users = (await stack.admin.get('/v1/users')).body.data;
    expect(users.find((u: { username: string }) => u.username === 'dana')).toMatchObject({ disabled: true });
    const mint = await stack.admin.post('/v1/tokens', { username: 'dana' });
    expect(mint.status).toBe(409);
    expect(mint.body.message).toContain('disabled');
  });

  it('enabling again restores the password login, not the tokens: they were revoked', async () => {
    expect((await stack.admin.get('/v1/tokens?username=dana')).body.data).toEqual([]);
    expect((await stack.admin.get('/v1/tokens?username=dana&status=revoked')).body.meta.total).toBe(2);
    const res = await patch(stack.admin, '/v1/users/dana', { disabled: false });
    expect(res.status).toBe(200);
    expect(res.body.data.disabled).toBe(false);
    const fresh = await login('dana', 'dana passphrase');
    expect(await status(fresh.token)).toBe(200);
    expect((await stack.admin.get('/v1/tokens?username=dana')).body.data.map((t: { token_id: string }) => t.token_id)).toEqual([fresh.token_id]);
  });

  it("closes with 4401 the streams a disabled user's token joined on others' sessions; those stay open", async () => {
    const opal = await person('opal', 'administrator');
    const session = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'acc-1', protocol: 'file-transfer' })).body.data;
    const byBearer = connectStream(session.websocket_url.split('?')[0], { authorization: `Bearer ${opal.token}` });
    await byBearer.opened;
    expect((await byBearer.request('list', { path: '/' })).ok).toBe(true);

    expect((await patch(stack.admin, '/v1/users/opal', { disabled: true })).status).toBe(200);
    expect(await byBearer.closed).toEqual({ code: 4401, reason: 'token revoked' });
    expect((await stack.admin.get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.status).toBe('open');
    expect((await connectStream(session.websocket_url.split('?')[0], { authorization: `Bearer ${opal.token}` }).closed).code).toBe(4401);
    await stack.admin.del(`/v1/remote-access/sessions/${session.session_id}`);
  });

  it('a new role applies from the next request on', async () => {
    const ross = await person('ross', 'developer');
    const r = stack.as(ross.token);
    expect((await r.get('/v1/devices')).status).toBe(200);
    const res = await patch(stack.admin, '/v1/users/ross', { role: null });
    expect(res.body.data).toMatchObject({ role: null, disabled: false });
    expect((await r.get('/v1/devices')).status).toBe(403);
    expect((await r.get('/v1/me')).body.data.role).toBeNull();
  });

  it('validates the change and needs an administrator with identity:write', async () => {
    for (const body of [{}, { disabled: 'yes' }, { role: 'king' }, { disabled: true, extra: 1 }]) {
      const res = await patch(stack.admin, '/v1/users/ross', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('bad_request');
    }
    expect((await patch(stack.admin, '/v1/users/nobody', { disabled: true })).status).toBe(404);
    const dev = stack.as((await person('drew', 'developer')).token);
    expect((await patch(dev, '/v1/users/ross', { disabled: true })).status).toBe(403);
    expect((await dev.del('/v1/users/ross')).status).toBe(403);
    const readOnly = (await stack.admin.post('/v1/tokens', { username: 'admin', scopes: ['identity:read'], ttl_seconds: 600 })).body.data;
    const denied = await patch(stack.as(readOnly.token), '/v1/users/ross', { disabled: true });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('identity:write');
  });
});

describe('deleting a user', () => {
  it('revokes every token (sessions close), keeps the audit, and keeps the name taken', async () => {
    const first = await person('eli', 'developer');
    const second = await login('eli', 'eli passphrase');
    const session = (await stack.as(first.token).post('/v1/remote-access/sessions', { device_id: 'acc-1', protocol: 'diagnostics' })).body.data;
    expect(await status(second.token)).toBe(200);

    const res = await stack.admin.del('/v1/users/eli');
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual({ username: 'eli', deleted: true });

    expect(await status(first.token)).toBe(401);
    expect(await status(second.token)).toBe(401);
    expect((await stack.admin.get(`/v1/remote-access/sessions/${session.session_id}`)).body.data).toMatchObject({
      status: 'closed',
      opened_by: 'eli',
    });
    const audit = (await stack.admin.get(`/v1/audit/remote-access?session_id=${session.session_id}`)).body.data;
    expect(audit.map((e: { event: string; actor: string; reason: string | null }) => [e.event, e.actor, e.reason])).toEqual([
      ['session.closed', 'system', 'user_deleted'],
      ['session.opened', 'eli', null],
    ]);
    const tokens = (await stack.admin.get('/v1/tokens?username=eli&status=revoked')).body.data;
    expect(tokens.map((t: { token_id: string }) => t.token_id).sort()).toEqual([first.token_id, second.token_id].sort());

    expect((await stack.admin.get('/v1/users')).body.data.map((u: { username: string }) => u.username)).not.toContain('eli');
    const relogin = await client(stack.url).post('/v1/auth/token', { username: 'eli', password: 'eli passphrase' });
    expect(relogin.status).toBe(401);
    expect(relogin.body.message).toBe('unknown user or wrong password');
    const again = await stack.admin.post('/v1/users', { username: 'eli', role: 'administrator', password: 'eli passphrase' });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain('deleted');
    expect((await stack.admin.del('/v1/users/eli')).status).toBe(404);
    expect((await patch(stack.admin, '/v1/users/eli', { disabled: false })).status).toBe(404);
    expect((await stack.admin.put('/v1/users/eli/password', { password: 'a new passphrase' })).status).toBe(404);
  });
});

describe('an enabled administrator always remains', () => {
  let fresh: Stack;
  beforeAll(async () => {
    fresh = await startStack();
  });
  afterAll(() => fresh.stop());

  it('refuses the last one, and anyone locking themself out', async () => {
    const demote = await patch(fresh.admin, '/v1/users/admin', { role: 'developer' });
    expect(demote.status).toBe(409);
    expect(demote.body).toMatchObject({ error: 'conflict', message: expect.stringContaining('last enabled administrator') });
    const self = await patch(fresh.admin, '/v1/users/admin', { disabled: true });
    expect(self.status).toBe(409);
    expect(self.body.message).toContain('your own account');
    expect((await fresh.admin.del('/v1/users/admin')).status).toBe(409);
    expect((await fresh.admin.get('/v1/me')).body.data).toMatchObject({ role: 'administrator' });

    expect((await fresh.admin.post('/v1/users', { username: 'ops', role: 'administrator', password: 'ops passphrase' })).status).toBe(201);
    const ops = fresh.as((await client(fresh.url).post('/v1/auth/token', { username: 'ops', password: 'ops passphrase' })).body.data.token);
    expect((await patch(ops, '/v1/users/admin', { disabled: true })).status).toBe(200);
    expect((await fresh.admin.get('/v1/me')).status).toBe(401);
    // ops is now the last enabled administrator
    const last = await patch(ops, '/v1/users/ops', { role: 'platform-engineer' });
    expect(last.status).toBe(409);
    expect(last.body.message).toContain('last enabled administrator');
    // once admin is back, either may step down, but neither may lock itself out
    expect((await patch(ops, '/v1/users/admin', { disabled: false })).status).toBe(200);
    for (const res of [await patch(ops, '/v1/users/ops', { disabled: true }), await ops.del('/v1/users/ops')]) {
      expect(res.status).toBe(409);
      expect(res.body.message).toContain('your own account');
    }
    // admin's old token stayed revoked when it was enabled again: it is given a new one
    expect((await fresh.admin.get('/v1/me')).status).toBe(401);
    const renewed = fresh.as((await ops.post('/v1/tokens', { username: 'admin' })).body.data.token);
    expect((await patch(ops, '/v1/users/ops', { role: 'platform-engineer' })).body.data.role).toBe('platform-engineer');
    expect((await renewed.get('/v1/me')).body.data).toMatchObject({ username: 'admin', role: 'administrator' });
  });
});

describe('changing a password', () => {
  it('one’s own with the current password, from any token, which stays; the others are revoked', async () => {
    const fay = await person('fay', 'developer', 'first passphrase');
    const f = stack.as(fay.token);
    const missing = await f.put('/v1/users/fay/password', { password: 'second passphrase' });
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([{ path: 'current_password', message: expect.any(String) }]);
    expect((await f.put('/v1/users/fay/password', { password: 'short', current_password: 'first passphrase' })).status).toBe(400);
    const wrong = await f.put('/v1/users/fay/password', { password: 'second passphrase', current_password: 'not it at all' });
    expect(wrong.status).toBe(403);
    expect(wrong.body.error).toBe('forbidden');

    const res = await f.put('/v1/users/fay/password', { password: 'second passphrase', current_password: 'first passphrase' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual({ username: 'fay', tokens_revoked: 0 });
    expect((await client(stack.url).post('/v1/auth/token', { username: 'fay', password: 'first passphrase' })).status).toBe(401);
    await login('fay', 'second passphrase');
    expect(await status(fay.token)).toBe(200);

    // a token without any scope for it will do: it proves nothing the current password does not
    const narrow = (await stack.admin.post('/v1/tokens', { username: 'fay', scopes: ['fleet:read'], ttl_seconds: 600 })).body.data;
    const byNarrow = await stack.as(narrow.token).put('/v1/users/fay/password', { password: 'third passphrase', current_password: 'second passphrase' });
    expect(byNarrow.status).toBe(200);
    expect(byNarrow.body.data.tokens_revoked).toBe(2); // fay.token and the login's; not the narrow one in use
    expect(await status(fay.token)).toBe(401);
    await login('fay', 'third passphrase');
    // but not someone else's
    const other = await stack.as(narrow.token).put('/v1/users/dana/password', { password: 'stolen passphrase', current_password: 'dana passphrase' });
    expect(other.status).toBe(403);
    expect(other.body.message).toContain('administrator');
  });

  it('revokes every other token of the user, not the one making the call (revoke_tokens: true, as older clients send, is the same)', async () => {
    const gus = await person('gus', 'developer', 'gus passphrase 1');
    const laptop = await login('gus', 'gus passphrase 1');
    const bot = (await stack.admin.post('/v1/tokens', { username: 'gus' })).body.data;
    const res = await stack.as(gus.token).put('/v1/users/gus/password', {
      password: 'gus passphrase 2',
      current_password: 'gus passphrase 1',
      revoke_tokens: true,
    });
    expect(res.body.data).toEqual({ username: 'gus', tokens_revoked: 2 });
    expect(await status(gus.token)).toBe(200);
    expect(await status(laptop.token)).toBe(401);
    expect(await status(bot.token)).toBe(401);
  });

  it('an administrator sets anyone’s without the current one', async () => {
    await person('hana', 'developer', 'hana passphrase 1');
    const res = await stack.admin.put('/v1/users/hana/password', { password: 'hana passphrase 2' });
    expect(res.status, res.text).toBe(200);
    await login('hana', 'hana passphrase 2');
    expect((await stack.admin.put('/v1/users/nobody/password', { password: 'any passphrase' })).status).toBe(404);
  });

  it('wrong current passwords count as failed logins of that user, then 429', async () => {
    const ike = await person('ike', 'developer', 'ike passphrase');
    const i = stack.as(ike.token);
    for (let n = 0; n < 10; n++) {
      expect((await i.put('/v1/users/ike/password', { password: 'new passphrase', current_password: `guess ${n}` })).status).toBe(403);
    }
    const limited = await i.put('/v1/users/ike/password', { password: 'new passphrase', current_password: 'ike passphrase' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await client(stack.url).post('/v1/auth/token', { username: 'ike', password: 'ike passphrase' })).status).toBe(429);
  });

  it('wrong current passwords sent at once: at most 10 are checked (403), the rest are 429 unchecked', async () => {
    const jo = await person('jo', 'developer', 'jo passphrase');
    const j = stack.as(jo.token);
    // Each attempt counts before its hash runs, so guesses in flight together cannot all be checked.
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, n) => j.put('/v1/users/jo/password', { password: 'new passphrase', current_password: `guess ${n}` })),
    );
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 403).length).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40 - statuses.filter((s) => s === 403).length);
    for (const r of replies.filter((x) => x.status === 429)) {
      expect(r.body).toMatchObject({ error: 'rate_limited', message: expect.stringContaining('too many failed logins') });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // the right one is refused too now, and the password did not change
    expect((await j.put('/v1/users/jo/password', { password: 'new passphrase', current_password: 'jo passphrase' })).status).toBe(429);
    expect((await stack.admin.put('/v1/users/jo/password', { password: 'reset passphrase' })).status).toBe(200);
  });
});

describe('tokens', () => {
  let ivy: { token: string; token_id: string };
  let second: { token: string; token_id: string };
  let fleet: { token: string; token_id: string };
  let brief: { token: string; token_id: string };
  beforeAll(async () => {
    ivy = await person('ivy', 'developer');
    second = await login('ivy', 'ivy passphrase');
    fleet = (await stack.admin.post('/v1/tokens', { username: 'ivy', scopes: ['fleet:read'], tenants: ['acme'], ttl_seconds: 600 })).body.data;
    brief = (await stack.admin.post('/v1/tokens', { username: 'ivy', ttl_seconds: 1 })).body.data;
    await waitFor(async () => (await status(brief.token)) === 401, 'the brief token to expire', 5000, 100);
  });

  const idsOf = (res: { body: { data: Array<{ token_id: string }> } }) => res.body.data.map((t) => t.token_id);

  it('lists one’s own, newest first, with every field and never a secret or its hash', async () => {
    const res = await stack.as(second.token).get('/v1/tokens');
    expect(res.status, res.text).toBe(200);
    expect(idsOf(res)).toEqual([fleet.token_id, second.token_id, ivy.token_id]);
    expect(res.body.meta).toEqual({ page: 1, per_page: 50, total: 3 });
    expect(res.body.data[0]).toEqual({
      token_id: fleet.token_id,
      username: 'ivy',
      scopes: ['fleet:read'],
      tenants: ['acme'],
      created_at: expect.any(String),
      expires_at: expect.any(String),
      revoked_at: null,
      status: 'active',
      current: false,
    });
    expect(res.body.data.map((t: { current: boolean }) => t.current)).toEqual([false, true, false]);
    const everything = (await stack.admin.get('/v1/tokens?all=true&status=all&per_page=200')).text;
    for (const secret of [ivy.token, second.token, fleet.token, brief.token, stack.adminToken]) {
      expect(res.text.includes(secret) || everything.includes(secret)).toBe(false);
      const hash = createHash('sha256').update(secret).digest('hex');
      expect(everything.includes(hash)).toBe(false);
    }
    expect(everything).not.toContain('hash');
  });

  it('filters by status and pages', async () => {
    const i = stack.as(ivy.token);
    expect(idsOf(await i.get('/v1/tokens?status=expired'))).toEqual([brief.token_id]);
    expect(idsOf(await i.get('/v1/tokens?status=revoked'))).toEqual([]);
    expect(idsOf(await i.get('/v1/tokens?status=all'))).toEqual([brief.token_id, fleet.token_id, second.token_id, ivy.token_id]);
    const page = await i.get('/v1/tokens?status=all&per_page=1&page=2');
    expect(idsOf(page)).toEqual([fleet.token_id]);
    expect(page.body.meta).toEqual({ page: 2, per_page: 1, total: 4 });
    for (const q of ['status=bogus', 'all=yes', 'all=true&username=ivy', 'per_page=0', 'secret=1']) {
      expect((await i.get(`/v1/tokens?${q}`)).status, q).toBe(400);
    }
  });

  it("needs no scope for one's own; another user's or everyone's need an administrator with identity:read", async () => {
    expect(idsOf(await stack.as(fleet.token).get('/v1/tokens'))).toContain(fleet.token_id);
    const i = stack.as(ivy.token);
    expect((await i.get('/v1/tokens?username=ivy')).status).toBe(200);
    expect((await i.get('/v1/tokens?username=admin')).status).toBe(403);
    expect((await i.get('/v1/tokens?all=true')).status).toBe(403);
    const all = await stack.admin.get('/v1/tokens?all=true');
    expect(all.body.data.some((t: { username: string }) => t.username === 'ivy')).toBe(true);
    expect(all.body.data.some((t: { username: string; current: boolean }) => t.username === 'admin' && t.current)).toBe(true);
    expect(idsOf(await stack.admin.get('/v1/tokens?username=ivy'))).toEqual([fleet.token_id, second.token_id, ivy.token_id]);
    const writeOnly = (await stack.admin.post('/v1/tokens', { username: 'admin', scopes: ['identity:write'], ttl_seconds: 600 })).body.data;
    const denied = await stack.as(writeOnly.token).get('/v1/tokens?all=true');
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('identity:read');
  });

  it("a token revokes itself or its own user's others; another user's is 404, exactly like an unknown one", async () => {
    const i = stack.as(ivy.token);
    const adminTokenId = (await stack.admin.get('/v1/me')).body.data.token_id as string;
    const others = await i.del(`/v1/tokens/${adminTokenId}`);
    const unknown = await i.del('/v1/tokens/tok_unknown');
    expect(others.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(others.body.message.replace(adminTokenId, 'ID')).toBe(unknown.body.message.replace('tok_unknown', 'ID'));
    expect((await stack.admin.get('/v1/me')).status).toBe(200);

    // a narrow token logs out another session of its user, then itself
    const f = stack.as(fleet.token);
    expect((await f.del(`/v1/tokens/${second.token_id}`)).body.data).toEqual({ token_id: second.token_id, revoked: true });
    expect(await status(second.token)).toBe(401);
    expect((await f.del(`/v1/tokens/${fleet.token_id}`)).status).toBe(200);
    expect(await status(fleet.token)).toBe(401);
    expect(idsOf(await i.get('/v1/tokens?status=revoked')).sort()).toEqual([second.token_id, fleet.token_id].sort());

    // an administrator's token without identity:write is told what it lacks
    const readOnly = (await stack.admin.post('/v1/tokens', { username: 'admin', scopes: ['identity:read'], ttl_seconds: 600 })).body.data;
    const denied = await stack.as(readOnly.token).del(`/v1/tokens/${ivy.token_id}`);
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('identity:write');
    expect((await stack.admin.del(`/v1/tokens/${ivy.token_id}`)).status).toBe(200);
    expect(await status(ivy.token)).toBe(401);
  });
});
