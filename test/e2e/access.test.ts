/**
 * Access requests (CONTRACT 10.3; docs/access.md), end to end with real agents: a policy for
 * env=prod devices; sessions there refused 403 `access_request_required` for every role
 * (administrators too), with the command that asks; a request approved by another administrator
 * opens the shell, within the grant; self-review refused; deny, cancel, a duration over the
 * policy's maximum; every step in the audit listing with its actor, and on the event stream of
 * the requester (not of others).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenEvents, type EventsListener } from '../helpers/events';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let boss: string; // a second administrator
let pat: string; // platform-engineer: may open shells
let dev: string; // developer: may open diagnostics
let patEvents: EventsListener;

/** Registers a device with `labels` and starts its agent. */
async function labeledDevice(deviceId: string, labels: Record<string, string>) {
  const res = await stack.admin.post('/v1/devices', { device_id: deviceId, labels });
  expect(res.status, res.text).toBe(201);
  stack.startAgent(deviceId, res.body.data.agent_token);
  await stack.waitForStatus(deviceId, 'online');
}

beforeAll(async () => {
  stack = await startStack();
  boss = await stack.userToken('boss', 'administrator');
  pat = await stack.userToken('pat', 'platform-engineer');
  dev = await stack.userToken('dev', 'developer');
  await labeledDevice('prod-1', { env: 'prod', site: 'plant-3' });
  await labeledDevice('lab-1', { env: 'lab' });
  patEvents = await listenEvents(stack.url, { authorization: `Bearer ${pat}` });
}, 60_000);
afterAll(async () => {
  patEvents?.close();
  await stack?.stop();
});

const open = (token: string, device: string, protocol: string, ttl_seconds?: number) =>
  stack.as(token).post('/v1/remote-access/sessions', { device_id: device, protocol, ...(ttl_seconds && { ttl_seconds }) });
const ask = (token: string, body: object) => stack.as(token).post('/v1/access-requests', body);

describe('access policies', () => {
  it('an administrator adds one for env=prod; anyone who may open sessions reads it; others may not add', async () => {
    const res = await stack.admin.post('/v1/access-policies', {
      name: 'prod devices',
      match: { labels: { env: 'prod' } },
      protocols: ['shell', 'diagnostics'],
      max_duration_seconds: 1800,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'prod devices', protocols: ['shell', 'diagnostics'], max_duration_seconds: 1800, created_by: 'admin' });
    expect(res.body.data.policy_id).toMatch(/^apol_/);
    const listed = await stack.as(dev).get('/v1/access-policies');
    expect(listed.body.data.map((p: { policy_id: string }) => p.policy_id)).toEqual([res.body.data.policy_id]);
    expect((await stack.as(pat).post('/v1/access-policies', { name: 'x', match: { labels: { env: 'lab' } }, protocols: ['shell'] })).status).toBe(403);
    // A policy deleted stops applying; the list shows live ones only.
    const other = await stack.admin.post('/v1/access-policies', { name: 'lab', match: { labels: { env: 'lab' } }, protocols: ['shell'] });
    expect(other.body.data.max_duration_seconds).toBe(3600);
    expect((await stack.admin.del(`/v1/access-policies/${other.body.data.policy_id}`)).status).toBe(204);
    expect((await stack.admin.del(`/v1/access-policies/${other.body.data.policy_id}`)).status).toBe(404);
    expect((await stack.as(dev).get('/v1/access-policies')).body.meta.total).toBe(1);
    // Both changes of who may open what are in the audit log, with what the policy said.
    const id = other.body.data.policy_id as string;
    const logged = (await stack.admin.get(`/v1/audit/events?event=policy.&target=policy:${id}`)).body.data as { event: string; details: unknown }[];
    expect(logged.map((e) => e.event)).toEqual(['policy.deleted', 'policy.created']);
    expect(logged[1]!.details).toEqual({ name: 'lab', labels: { env: 'lab' }, protocols: ['shell'], max_duration_seconds: 3600 });
  });

  it('refuses sessions on a matched device without a grant, for every role, saying how to ask; other devices are unchanged', async () => {
    for (const [token, protocol] of [
      [pat, 'shell'],
      [stack.adminToken, 'shell'],
      [dev, 'diagnostics'],
    ] as const) {
      const res = await open(token, 'prod-1', protocol);
      expect(res.status, res.text).toBe(403);
      expect(res.body.error).toBe('access_request_required');
      expect(res.body.message).toContain(`the device prod-1 needs an approved access request for ${protocol}`);
      expect(res.body.message).toContain(`tether access request prod-1 --protocol ${protocol} --reason "…"`);
      expect(res.body.details).toMatchObject({ device_id: 'prod-1', protocol, policies: [{ name: 'prod devices', max_duration_seconds: 1800 }] });
    }
    const lab = await open(pat, 'lab-1', 'shell');
    expect(lab.status, lab.text).toBe(201);
    expect(lab.body.data.access_request_id).toBeUndefined();
    expect((await stack.as(pat).del(`/v1/remote-access/sessions/${lab.body.data.session_id}`)).status).toBe(200);
  });
});

describe('access requests', () => {
  let patRequest: string;

  it('a request approved by another administrator opens the shell, within the grant', async () => {
    const asked = await ask(pat, { device_id: 'prod-1', protocols: ['shell'], reason: 'INC-42: read the logs' });
    expect(asked.status, asked.text).toBe(201);
    const r = asked.body.data;
    expect(r).toMatchObject({ status: 'pending', requester: 'pat', device_id: 'prod-1', protocols: ['shell'], duration_seconds: 1800, starts_at: null });
    expect(Date.parse(r.expires_at) - Date.parse(r.created_at)).toBe(86_400_000);
    patRequest = r.request_id;
    expect((await stack.as(pat).post(`/v1/access-requests/${r.request_id}/approve`, { reason: 'me' })).status).toBe(403);
    expect((await open(pat, 'prod-1', 'shell')).status).toBe(403);

    const approved = await stack.as(boss).post(`/v1/access-requests/${r.request_id}/approve`, { reason: 'on call' });
    expect(approved.status, approved.text).toBe(200);
    const g = approved.body.data;
    expect(g).toMatchObject({ status: 'approved', reviewed_by: 'boss', review_reason: 'on call' });
    expect(g.starts_at).toBe(g.reviewed_at);
    expect(Date.parse(g.ends_at) - Date.parse(g.starts_at)).toBe(1800_000);
    expect((await stack.as(boss).post(`/v1/access-requests/${r.request_id}/deny`, { reason: 'late' })).status).toBe(409);

    const shell = await open(pat, 'prod-1', 'shell');
    expect(shell.status, shell.text).toBe(201);
    expect(shell.body.data.access_request_id).toBe(r.request_id);
    // The default TTL (3600 s) is longer than the grant: the session ends with it.
    expect(shell.body.data.expires_at).toBe(g.ends_at);
    // Not covered by the grant: another protocol on the device.
    expect((await open(stack.adminToken, 'prod-1', 'diagnostics')).body.error).toBe('access_request_required');
    // Extending never goes past the grant.
    const extended = await stack.as(pat).post(`/v1/remote-access/sessions/${shell.body.data.session_id}/extend`, { ttl_seconds: 28_000 });
    expect(extended.status, extended.text).toBe(200);
    expect(extended.body.data.expires_at).toBe(g.ends_at);
    expect((await stack.as(pat).del(`/v1/remote-access/sessions/${shell.body.data.session_id}`)).status).toBe(200);
  });

  it('administrators are subject too, and may not review their own request', async () => {
    const mine = (await ask(stack.adminToken, { device_id: 'prod-1', protocols: ['diagnostics'], reason: 'check the disk' })).body.data;
    const self = await stack.admin.post(`/v1/access-requests/${mine.request_id}/approve`, { reason: 'trust me' });
    expect(self.status).toBe(403);
    expect(self.body.error).toBe('self_review_forbidden');
    expect((await stack.admin.post(`/v1/access-requests/${mine.request_id}/deny`, { reason: 'x' })).body.error).toBe('self_review_forbidden');
    expect((await stack.as(boss).post(`/v1/access-requests/${mine.request_id}/approve`, { reason: 'fine' })).status).toBe(200);
    const diag = await open(stack.adminToken, 'prod-1', 'diagnostics');
    expect(diag.status, diag.text).toBe(201);
    await stack.admin.del(`/v1/remote-access/sessions/${diag.body.data.session_id}`);
  });

  it('deny keeps the device closed; the requester cancels a pending one; nobody else can', async () => {
    const denied = (await ask(dev, { device_id: 'prod-1', protocols: ['diagnostics'], reason: 'curious' })).body.data;
    const d = await stack.as(boss).post(`/v1/access-requests/${denied.request_id}/deny`, { reason: 'no ticket' });
    expect(d.body.data).toMatchObject({ status: 'denied', reviewed_by: 'boss', review_reason: 'no ticket', starts_at: null, ends_at: null });
    expect((await open(dev, 'prod-1', 'diagnostics')).body.error).toBe('access_request_required');

    const pending = (await ask(dev, { device_id: 'prod-1', protocols: ['diagnostics'], reason: 'again' })).body.data;
    expect((await stack.as(pat).get(`/v1/access-requests/${pending.request_id}`)).status).toBe(404);
    expect((await stack.as(pat).del(`/v1/access-requests/${pending.request_id}`)).status).toBe(404);
    expect((await stack.as(boss).del(`/v1/access-requests/${pending.request_id}`)).status).toBe(403);
    const canceled = await stack.as(dev).del(`/v1/access-requests/${pending.request_id}`);
    expect(canceled.status, canceled.text).toBe(200);
    expect(canceled.body.data.status).toBe('canceled');
    expect((await stack.as(dev).del(`/v1/access-requests/${pending.request_id}`)).status).toBe(409);
    expect((await stack.as(boss).post(`/v1/access-requests/${pending.request_id}/approve`, { reason: 'late' })).status).toBe(409);
  });

  it('refuses what no policy asks for, a duration over the maximum, an unknown device, a protocol the role cannot open', async () => {
    const over = await ask(pat, { device_id: 'prod-1', protocols: ['shell'], reason: 'long', duration_seconds: 3600 });
    expect(over.status).toBe(422);
    expect(over.body.message).toContain('over the maximum of access policy "prod devices" (1800 s)');
    const lab = await ask(pat, { device_id: 'lab-1', protocols: ['shell'], reason: 'no policy' });
    expect(lab.status).toBe(422);
    expect(lab.body.message).toContain('no access policy requires a request for shell on device lab-1');
    expect((await ask(pat, { device_id: 'nope', protocols: ['shell'], reason: 'x' })).status).toBe(404);
    expect((await ask(dev, { device_id: 'prod-1', protocols: ['shell'], reason: 'x' })).status).toBe(403);
    expect((await ask(pat, { device_id: 'prod-1', protocols: ['shell'], reason: '' })).status).toBe(400);
  });

  it('keeps every request listed: requesters see their own, administrators all', async () => {
    const all = await stack.as(boss).get('/v1/access-requests');
    expect(all.body.meta.total).toBe(4);
    expect(all.body.data.map((r: { status: string }) => r.status)).toEqual(['canceled', 'denied', 'approved', 'approved']);
    const devs = await stack.as(dev).get('/v1/access-requests');
    expect(devs.body.data.map((r: { requester: string }) => r.requester)).toEqual(['dev', 'dev']);
    expect((await stack.as(dev).get('/v1/access-requests?requester=pat')).body.meta.total).toBe(0);
    expect((await stack.as(boss).get('/v1/access-requests?requester=pat&status=approved')).body.data[0].request_id).toBe(patRequest);
  });

  it('audits each step with its actor and request, and tells the requester on the event stream', async () => {
    const approved = (await stack.admin.get('/v1/audit/remote-access?event=access_request.approved')).body.data;
    expect(approved.map((e: Record<string, unknown>) => [e.actor, e.device_id, e.reason, e.session_id])).toEqual([
      ['boss', 'prod-1', 'fine', null],
      ['boss', 'prod-1', 'on call', null],
    ]);
    expect(approved[1].request_id).toBe(patRequest);
    const steps = (await stack.as(pat).get(`/v1/audit/remote-access?device_id=prod-1`)).body.data.filter(
      (e: { request_id?: string }) => e.request_id === patRequest,
    );
    expect(steps.map((e: { event: string; actor: string; reason: string }) => [e.event, e.actor, e.reason])).toEqual([
      ['access_request.approved', 'boss', 'on call'],
      ['access_request.created', 'pat', 'INC-42: read the logs'],
    ]);
    await waitFor(() => patEvents.events.filter((e) => e.event.startsWith('access_request.')).length >= 2, 'pat’s access events');
    const seen = patEvents.events.filter((e) => e.event.startsWith('access_request.'));
    expect(seen.map((e) => [e.event, e.data.request_id, e.data.status, e.data.actor])).toEqual([
      ['access_request.created', patRequest, 'pending', 'pat'],
      ['access_request.approved', patRequest, 'approved', 'boss'],
    ]);
  });
});
