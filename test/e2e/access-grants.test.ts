/**
 * Access grants ending (CONTRACT 10.3; docs/access.md), with real agents and real shells: a grant
 * that ends while a shell is open closes its stream and the record says `access_expired`, and the
 * grant is then `ended`; a revoke closes the open shell at once (`access_revoked`); a request
 * nobody reviews expires (`system` in the audit); every request stays listed afterwards. The
 * shortest grant is 60 s, so the tests move its end in the database instead of waiting.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack';
import { execOnStore } from '../helpers/store';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let boss: string;
let pat: string;

beforeAll(async () => {
  stack = await startStack();
  boss = await stack.userToken('boss', 'administrator');
  pat = await stack.userToken('pat', 'platform-engineer');
  const res = await stack.admin.post('/v1/devices', { device_id: 'prod-9', labels: { env: 'prod' } });
  stack.startAgent('prod-9', res.body.data.agent_token);
  await stack.waitForStatus('prod-9', 'online');
  const policy = await stack.admin.post('/v1/access-policies', { name: 'prod', match: { labels: { env: 'prod' } }, protocols: ['shell'] });
  expect(policy.status, policy.text).toBe(201);
}, 60_000);
afterAll(() => stack?.stop());

/** pat asks for shell on prod-9 and boss approves: the grant. */
async function grant(reason: string) {
  const asked = await stack.as(pat).post('/v1/access-requests', { device_id: 'prod-9', protocols: ['shell'], reason, duration_seconds: 600 });
  expect(asked.status, asked.text).toBe(201);
  const approved = await stack.as(boss).post(`/v1/access-requests/${asked.body.data.request_id}/approve`, { reason: 'ok' });
  expect(approved.status, approved.text).toBe(200);
  return approved.body.data as { request_id: string; ends_at: string };
}

/** pat opens a shell on prod-9 and connects to it; the shell answers. */
async function shell() {
  const res = await stack.as(pat).post('/v1/remote-access/sessions', { device_id: 'prod-9', protocol: 'shell' });
  expect(res.status, res.text).toBe(201);
  const c = connectStream(res.body.data.websocket_url);
  await c.opened;
  c.send(Buffer.from('echo ready-$((40+2))\n'));
  await c.waitForOutput(/ready-42/);
  return { session: res.body.data as { session_id: string; access_request_id: string }, c };
}

const record = async (path: string) => (await stack.admin.get(path)).body.data;
const sessionAudit = async (sessionId: string) =>
  (await record(`/v1/audit/remote-access?session_id=${sessionId}`)).map((e: { event: string; actor: string; reason: string | null }) => [
    e.event,
    e.actor,
    e.reason,
  ]);

describe('a grant ending', () => {
  it('closes its open shell when it ends: the stream ends, the record says access_expired, the grant is ended', async () => {
    const g = await grant('INC-7');
    const { session, c } = await shell();
    expect(session.access_request_id).toBe(g.request_id);
    // The grant (and so the session) ends now rather than in 10 minutes.
    const past = new Date(Date.now() - 1000).toISOString();
    await execOnStore(stack.dataDir, `UPDATE access_requests SET ends_at = '${past}' WHERE request_id = '${g.request_id}'`);
    await execOnStore(stack.dataDir, `UPDATE sessions SET expires_at = '${past}' WHERE session_id = '${session.session_id}'`);
    const closed = await c.closed;
    expect(closed).toEqual({ code: 4001, reason: 'session expired: its access grant ended' });
    const s = await record(`/v1/remote-access/sessions/${session.session_id}`);
    expect(s).toMatchObject({ status: 'closed', close_reason: 'access_expired', access_request_id: g.request_id });
    expect((await sessionAudit(session.session_id))[0]).toEqual(['session.expired', 'system', 'access_expired']);
    await waitFor(async () => (await record(`/v1/access-requests/${g.request_id}`)).status === 'ended', 'the grant to end');
    const again = await stack.as(pat).post('/v1/remote-access/sessions', { device_id: 'prod-9', protocol: 'shell' });
    expect(again.body.error).toBe('access_request_required');
    expect((await stack.as(boss).post(`/v1/access-requests/${g.request_id}/revoke`, {})).status).toBe(409);
  });

  it('a revoke closes the open shell at once with access_revoked, audited with who revoked it', async () => {
    const g = await grant('INC-8');
    const { session, c } = await shell();
    expect((await stack.as(pat).post(`/v1/access-requests/${g.request_id}/revoke`, {})).status).toBe(403);
    const revoked = await stack.as(boss).post(`/v1/access-requests/${g.request_id}/revoke`, { reason: 'done here' });
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.body.data).toMatchObject({ status: 'revoked', revoked_by: 'boss', revoke_reason: 'done here' });
    // At once: the session is closed by the time the revoke answered.
    expect(await record(`/v1/remote-access/sessions/${session.session_id}`)).toMatchObject({ status: 'closed', close_reason: 'access_revoked' });
    expect(await c.closed).toEqual({ code: 4000, reason: 'session closed: its access grant was revoked' });
    expect((await sessionAudit(session.session_id))[0]).toEqual(['session.closed', 'boss', 'access_revoked']);
    const audit = await record(`/v1/audit/remote-access?event=access_request.revoked`);
    expect(audit.map((e: Record<string, unknown>) => [e.request_id, e.actor, e.reason])).toEqual([[g.request_id, 'boss', 'done here']]);
    expect((await stack.as(boss).post(`/v1/access-requests/${g.request_id}/revoke`, {})).status).toBe(409);
    expect((await stack.as(pat).post('/v1/remote-access/sessions', { device_id: 'prod-9', protocol: 'shell' })).body.error).toBe('access_request_required');
  });
});

describe('a request nobody reviews', () => {
  it('expires at its expires_at: audited as system, no longer reviewable; history keeps every request', async () => {
    const asked = (await stack.as(pat).post('/v1/access-requests', { device_id: 'prod-9', protocols: ['shell'], reason: 'weekend' })).body.data;
    await execOnStore(
      stack.dataDir,
      `UPDATE access_requests SET expires_at = '${new Date(Date.now() - 1000).toISOString()}' WHERE request_id = '${asked.request_id}'`,
    );
    // Past its time it can no longer be approved, even before the sweep marks it.
    expect((await stack.as(boss).post(`/v1/access-requests/${asked.request_id}/approve`, { reason: 'late' })).status).toBe(409);
    await waitFor(async () => (await record(`/v1/access-requests/${asked.request_id}`)).status === 'expired', 'the request to expire');
    const audit = await record(`/v1/audit/remote-access?event=access_request.expired`);
    expect(audit.map((e: Record<string, unknown>) => [e.request_id, e.actor, e.device_id])).toEqual([[asked.request_id, 'system', 'prod-9']]);
    expect((await stack.as(pat).del(`/v1/access-requests/${asked.request_id}`)).status).toBe(409);

    const history = await stack.as(pat).get('/v1/access-requests');
    expect(history.body.data.map((r: { status: string }) => r.status)).toEqual(['expired', 'revoked', 'ended']);
    expect((await stack.as(pat).get('/v1/access-requests?status=revoked')).body.meta.total).toBe(1);
  });
});
