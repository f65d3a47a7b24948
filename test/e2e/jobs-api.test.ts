/**
 * The jobs HTTP interface (CONTRACT 10.2) on a real server, without agents (executions stay
 * queued): validation, each target kind (a fleet group per tenant, with the fleet interface's
 * answers), roles per kind, scopes, visibility, cancel, the audit listing and `job.updated` on
 * GET /v1/events. Blobs are jobs-blobs-api.test.ts. Every response is checked against the OpenAPI
 * document by the test client.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenEvents, type EventsListener } from '../helpers/events';
import { VIN, tenantClient } from '../helpers/fleet';
import { client, type Client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
const tokens: Record<string, string> = {};
const as = (who: string): Client => client(stack.url, tokens[who]);

/** A user with `role` and a token with these scopes and tenants (default: every scope, no tenant). */
async function user(username: string, role: string | null, grant: { scopes?: string[]; tenants?: string[] } = {}): Promise<string> {
  const created = await stack.admin.post('/v1/users', { username, role, kind: 'human' });
  expect(created.status, created.text).toBe(201);
  const issued = await stack.admin.post('/v1/tokens', { username, ...grant });
  expect(issued.status, issued.text).toBe(201);
  return issued.body.data.token as string;
}

beforeAll(async () => {
  stack = await startStack();
  for (const [id, labels] of [
    ['jd-1', { site: 'north', tier: 'edge' }],
    ['jd-2', { site: 'north' }],
    ['jd-3', { site: 'south', tier: 'edge' }],
    ['jd-4', {}],
  ] as const) {
    const res = await stack.admin.post('/v1/devices', { device_id: id, labels });
    expect(res.status, res.text).toBe(201);
  }
  tokens.dev = await user('jdev', 'developer');
  tokens.dev2 = await user('jdev2', 'developer');
  tokens.pe = await user('jpe', 'platform-engineer');
  tokens.reader = await user('jreader', 'administrator', { scopes: ['jobs:read', 'sessions:read'] });
  tokens.sessionsOnly = await user('jsess', 'developer', { scopes: ['sessions:read', 'sessions:write'] });
  tokens.acmeOps = await user('jacme', 'developer', { scopes: ['jobs:write', 'jobs:read', 'fleet:read'], tenants: ['acme'] });
  tokens.acmeNoFleet = await user('jacme2', 'developer', { scopes: ['jobs:write', 'jobs:read'], tenants: ['acme'] });
});
afterAll(async () => {
  await stack?.stop();
});

const diag = (target: unknown, more: Record<string, unknown> = {}) => ({ kind: 'diagnostics', op: 'system.info', target, ...more });

describe('creating a job', () => {
  it('answers 201 with the job, its defaults and its executions queued in target order (duplicates folded)', async () => {
    const res = await as('dev').post('/v1/jobs', diag({ device_ids: ['jd-2', 'jd-1', 'jd-2'] }));
    expect(res.status, res.text).toBe(201);
    expect(res.body.data).toMatchObject({
      kind: 'diagnostics',
      status: 'in_progress',
      target: { device_ids: ['jd-2', 'jd-1', 'jd-2'] },
      spec: { op: 'system.info', params: {} },
      max_per_minute: 60,
      max_in_flight: 10,
      abort_failure_pct: null,
      abort_min_executed: 10,
      expires_in_seconds: 86_400,
      created_by: 'jdev',
      finished_at: null,
      abort_reason: null,
      counts: { queued: 2, in_progress: 0, succeeded: 0, failed: 0, timed_out: 0, canceled: 0 },
    });
    const execs = await as('dev').get(`/v1/jobs/${res.body.data.job_id}/executions`);
    expect(execs.body.data.map((e: { device_id: string; status: string; attempt: number }) => [e.device_id, e.status, e.attempt])).toEqual([
      ['jd-2', 'queued', 0],
      ['jd-1', 'queued', 0],
    ]);
    expect(execs.body.meta).toEqual({ page: 1, per_page: 100, total: 2 });
  });

  it('refuses malformed bodies with messages naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ kind: 'reboot', target: { device_ids: ['jd-1'] } }, /kind: must be one of diagnostics, command, file-push/],
      [diag({ device_ids: [] }), /target/],
      [diag({ device_ids: ['jd-1'], labels: { a: 'b' } }), /target: must be exactly one of \{"device_ids"/],
      [diag({ device_ids: Array.from({ length: 10_001 }, (_, i) => `d${i}`) }), /target: device_ids: must have at most 10000 items/],
      [diag({ group_id: 'grp_x' }), /target: tenant: is required/],
      [{ kind: 'command', target: { device_ids: ['jd-1'] }, argv: ['echo', 'a\u0000b'] }, /argv\[1\]: must not contain a NUL/],
      [diag({ device_ids: ['jd-1'] }, { params: { path: 'x'.repeat(5000) } }), /params: must be at most 4096 bytes as JSON/],
      [diag({ labels: {} }), /at least one label/],
      [{ kind: 'command', target: { device_ids: ['jd-1'] }, argv: [] }, /argv/],
      [{ kind: 'command', target: { device_ids: ['jd-1'] }, argv: ['true'], timeout_seconds: 3601 }, /timeout_seconds/],
      [{ kind: 'file-push', target: { device_ids: ['jd-1'] }, blob_id: 'blob_x', path: '../etc/passwd' }, /inside the files root/],
      [{ kind: 'file-push', target: { device_ids: ['jd-1'] }, blob_id: 'blob_x', path: 'a', mode: '999' }, /octal mode/],
      [diag({ device_ids: ['jd-1'] }, { max_per_minute: 0 }), /max_per_minute/],
      [diag({ device_ids: ['jd-1'] }, { expires_in_seconds: 10 }), /expires_in_seconds/],
      [diag({ device_ids: ['jd-1'] }, { op: 'rm -rf' }), /op/],
    ];
    for (const [body, message] of cases) {
      const res = await as('dev').post('/v1/jobs', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toBe('bad_request');
      expect(res.body.message).toMatch(message);
    }
  });

  it('names unknown devices (422) and refuses a selector that matches none (422)', async () => {
    const res = await as('dev').post('/v1/jobs', diag({ device_ids: ['jd-1', 'nope-1', 'nope-2'] }));
    expect(res.status).toBe(422);
    expect(res.body.message).toMatch(/no such devices: nope-1, nope-2/);
    const none = await as('dev').post('/v1/jobs', diag({ labels: { site: 'mars' } }));
    expect(none.status).toBe(422);
    expect(none.body.message).toMatch(/no device carries the labels/);
  });

  it('resolves labels to the devices carrying all of them', async () => {
    const res = await as('dev').post('/v1/jobs', diag({ labels: { tier: 'edge' } }));
    expect(res.status, res.text).toBe(201);
    const execs = await as('dev').get(`/v1/jobs/${res.body.data.job_id}/executions`);
    expect(execs.body.data.map((e: { device_id: string }) => e.device_id)).toEqual(['jd-1', 'jd-3']);
    const both = await as('dev').post('/v1/jobs', diag({ labels: { tier: 'edge', site: 'south' } }));
    expect(both.body.data.counts.queued).toBe(1);
  });

  it('resolves a fleet group with the tenant rules of the fleet interface, never another tenant’s group', async () => {
    const fleet = async (tenant: string) => {
      const c = tenantClient(stack, stack.adminToken, tenant);
      const group = await c.post('/v1/fleet/groups', { name: 'vans' });
      expect(group.status, group.text).toBe(201);
      return { c, groupId: group.body.data.group_id as string };
    };
    const acme = await fleet('acme');
    const globex = await fleet('globex');
    const vehicles: Array<[typeof acme, number, string | undefined]> = [
      [acme, 1, 'jd-2'],
      [acme, 2, 'jd-3'],
      [acme, 3, undefined],
      [globex, 4, 'jd-4'],
    ];
    for (const [f, n, device] of vehicles) {
      const v = await f.c.post('/v1/fleet/vehicles', { vin: VIN(900 + n), ...(device && { device_id: device }) });
      expect(v.status, v.text).toBe(201);
      const put = await f.c.put(`/v1/fleet/vehicles/${v.body.data.vehicle_id}/group`, { group_id: f.groupId });
      expect(put.status, put.text).toBe(200);
    }
    const ok = await as('acmeOps').post('/v1/jobs', diag({ group_id: acme.groupId, tenant: 'acme' }));
    expect(ok.status, ok.text).toBe(201);
    const execs = await as('acmeOps').get(`/v1/jobs/${ok.body.data.job_id}/executions`);
    expect(execs.body.data.map((e: { device_id: string }) => e.device_id).sort()).toEqual(['jd-2', 'jd-3']);
    // globex's group named as acme's: not found, as GET /v1/fleet/groups/{id} in acme answers.
    const leak = await as('acmeOps').post('/v1/jobs', diag({ group_id: globex.groupId, tenant: 'acme' }));
    expect(leak.status).toBe(404);
    expect((await tenantClient(stack, tokens.acmeOps!, 'acme').get(`/v1/fleet/groups/${globex.groupId}`)).status).toBe(404);
    // A tenant the token does not hold, or no fleet:read: 403 as the fleet interface answers them.
    const other = await as('acmeOps').post('/v1/jobs', diag({ group_id: globex.groupId, tenant: 'globex' }));
    expect(other.status).toBe(403);
    expect(other.body.message).toMatch(/tenant globex/);
    expect((await tenantClient(stack, tokens.acmeOps!, 'globex').get('/v1/fleet/groups')).status).toBe(403);
    const noFleet = await as('acmeNoFleet').post('/v1/jobs', diag({ group_id: acme.groupId, tenant: 'acme' }));
    expect(noFleet.status).toBe(403);
    expect(noFleet.body.message).toMatch(/fleet:read/);
    const empty = await globex.c.post('/v1/fleet/groups', { name: 'empty' });
    const none = await stack.admin.post('/v1/jobs', diag({ group_id: empty.body.data.group_id, tenant: 'globex' }));
    expect(none.status).toBe(422);
  });
});

describe('roles and scopes', () => {
  const command = { kind: 'command', target: { device_ids: ['jd-1'] }, argv: ['uptime'] };

  it('lets each kind be created from its role up', async () => {
    const blob = await stack.admin.raw('POST', '/v1/blobs', 'hello', { 'content-type': 'application/octet-stream' });
    const push = { kind: 'file-push', target: { device_ids: ['jd-1'] }, blob_id: blob.body.data.blob_id, path: 'etc/hello.txt' };
    expect((await as('dev').post('/v1/jobs', command)).status).toBe(403);
    expect((await as('dev').post('/v1/jobs', command)).body.message).toMatch(/platform-engineer/);
    const cmd = await as('pe').post('/v1/jobs', command);
    expect(cmd.status, cmd.text).toBe(201);
    expect(cmd.body.data.spec).toEqual({ argv: ['uptime'], timeout_seconds: 300 });
    expect((await as('pe').post('/v1/jobs', push)).status).toBe(403);
    const pushed = await stack.admin.post('/v1/jobs', { ...push, mode: '600' });
    expect(pushed.status, pushed.text).toBe(201);
    expect(pushed.body.data.spec).toEqual({
      blob_id: blob.body.data.blob_id,
      path: 'etc/hello.txt',
      mode: '0600',
      size: 5,
      sha256: createHash('sha256').update('hello').digest('hex'),
    });
    const missing = await stack.admin.post('/v1/jobs', { ...push, blob_id: 'blob_nothere' });
    expect(missing.status).toBe(422);
    expect(missing.body.message).toMatch(/no blob blob_nothere/);
  });

  it('needs jobs:write to create and jobs:read to read', async () => {
    const write = await as('reader').post('/v1/jobs', diag({ device_ids: ['jd-1'] }));
    expect(write.status).toBe(403);
    expect(write.body.message).toMatch(/jobs:write/);
    expect((await as('reader').get('/v1/jobs')).status).toBe(200);
    const read = await as('sessionsOnly').get('/v1/jobs');
    expect(read.status).toBe(403);
    expect(read.body.message).toMatch(/jobs:read/);
  });
});

describe('visibility and cancel', () => {
  it('shows a job to its creator and administrators only; cancels once, then 409', async () => {
    const created = await as('dev2').post('/v1/jobs', diag({ device_ids: ['jd-1', 'jd-2'] }));
    const id = created.body.data.job_id as string;
    expect((await as('dev').get(`/v1/jobs/${id}`)).status).toBe(404);
    expect((await as('dev').get(`/v1/jobs/${id}/executions`)).status).toBe(404);
    expect((await as('dev').post(`/v1/jobs/${id}/cancel`)).status).toBe(404);
    expect((await as('dev').get('/v1/jobs?per_page=200')).body.data.map((j: { job_id: string }) => j.job_id)).not.toContain(id);
    expect((await stack.admin.get(`/v1/jobs/${id}`)).status).toBe(200);
    const mine = await as('dev2').get('/v1/jobs?status=in_progress');
    expect(mine.body.data.map((j: { job_id: string }) => j.job_id)).toEqual([id]);

    const canceled = await as('dev2').post(`/v1/jobs/${id}/cancel`);
    expect(canceled.status, canceled.text).toBe(200);
    expect(canceled.body.data).toMatchObject({ status: 'canceled', counts: { queued: 0, canceled: 2 } });
    expect(canceled.body.data.finished_at).not.toBeNull();
    const execs = await as('dev2').get(`/v1/jobs/${id}/executions?status=canceled`);
    expect(execs.body.data.map((e: { error: { code: string } }) => e.error.code)).toEqual(['job_canceled', 'job_canceled']);
    const again = await stack.admin.post(`/v1/jobs/${id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/already ended \(canceled\)/);
    expect((await as('dev2').get('/v1/jobs?status=canceled')).body.data.map((j: { job_id: string }) => j.job_id)).toEqual([id]);

    const audit = await as('dev2').get(`/v1/audit/remote-access?job_id=${id}`);
    expect(audit.status, audit.text).toBe(200);
    expect(audit.body.data.map((e: { event: string; job_id: string; actor: string; session_id: null }) => [e.event, e.job_id, e.actor, e.session_id])).toEqual([
      ['job.canceled', id, 'jdev2', null],
      ['job.created', id, 'jdev2', null],
    ]);
    expect((await as('dev').get(`/v1/audit/remote-access?job_id=${id}`)).body.data).toEqual([]);
    expect((await stack.admin.get(`/v1/audit/remote-access?event=job.canceled&job_id=${id}`)).body.meta.total).toBe(1);
  });

  it('publishes job.updated to the creator and administrators only', async () => {
    const listeners: Record<string, EventsListener> = {};
    for (const who of ['dev', 'dev2']) listeners[who] = await listenEvents(stack.url, { authorization: `Bearer ${tokens[who]}` });
    listeners.admin = await listenEvents(stack.url, { authorization: `Bearer ${stack.adminToken}` });
    try {
      const id = (await as('dev').post('/v1/jobs', diag({ device_ids: ['jd-3'] }))).body.data.job_id as string;
      await as('dev').post(`/v1/jobs/${id}/cancel`);
      const updates = (l: EventsListener) => l.events.filter((e) => e.event === 'job.updated' && e.data.job_id === id).map((e) => e.data.status);
      for (const who of ['dev', 'admin']) await waitFor(() => updates(listeners[who]!).includes('canceled'), `${who} to hear the cancel`);
      expect(updates(listeners.dev!)[0]).toBe('in_progress');
      expect(listeners.dev!.events.find((e) => e.data.job_id === id)?.data).toMatchObject({ kind: 'diagnostics', created_by: 'jdev', counts: { queued: 1 } });
      expect(updates(listeners.dev2!)).toEqual([]);
    } finally {
      for (const l of Object.values(listeners)) l.close();
    }
  });
});
