/**
 * Safe retries and optimistic concurrency end to end (issue 19; CONTRACT 9): `Idempotency-Key` on
 * the creating POSTs, `ETag` / `If-Match` on services, canary state, groups and devices, and a new
 * agent token for a device (`POST /v1/devices/{id}/agent-token`) that disconnects the old agent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from '../helpers/http';
import { serviceSpec } from '../helpers/service-spec';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let pe: Client;

beforeAll(async () => {
  stack = await startStack({ simReplicaMs: 20 });
  pe = stack.as(await stack.userToken('retry-pe@example.com', 'platform-engineer'));
});
afterAll(() => stack.stop());

const key = (name: string) => ({ 'idempotency-key': `${name}-${Math.random().toString(36).slice(2)}` });
const apply = (c: Client, yaml: string, headers: Record<string, string> = {}, query = '') =>
  c.raw('POST', `/v1/services?env=dev${query}`, yaml, { 'content-type': 'application/yaml', ...headers });

describe('Idempotency-Key', () => {
  it('a retry gets the first response, marked as a replay, and creates nothing more', async () => {
    const k = key('dev');
    const first = await stack.admin.post('/v1/devices', { device_id: 'idem-1' }, k);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await stack.admin.post('/v1/devices', { device_id: 'idem-1' }, k);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body); // the same agent token: the retry did not make another
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    // without the key, the same request is a new one: the device exists
    expect((await stack.admin.post('/v1/devices', { device_id: 'idem-1' })).status).toBe(409);
  });

  it('the same key with another request is 422 idempotency_key_reused', async () => {
    const k = key('reuse');
    expect((await stack.admin.post('/v1/devices', { device_id: 'idem-2' }, k)).status).toBe(201);
    const other = await stack.admin.post('/v1/devices', { device_id: 'idem-3' }, k);
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ error: 'idempotency_key_reused', status: 422 });
    expect((await stack.admin.get('/v1/devices/idem-3')).status).toBe(404);
    // another path with that key is another request too
    const elsewhere = await stack.admin.post('/v1/users', { username: 'idem-user@example.com', role: 'developer' }, k);
    expect(elsewhere.body).toMatchObject({ error: 'idempotency_key_reused' });
  });

  it('a request that failed keeps nothing: its retry runs again', async () => {
    const k = key('failed');
    const bad = await stack.admin.post('/v1/devices', { device_id: 'no spaces allowed' }, k);
    expect(bad.status).toBe(400);
    const fixed = await stack.admin.post('/v1/devices', { device_id: 'idem-4' }, k);
    expect(fixed.status).toBe(201);
    expect(fixed.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keys are per user: two users with one key each get their own result', async () => {
    const other = stack.as(await stack.userToken('retry-admin2@example.com', 'administrator'));
    const k = key('per-user');
    const mine = await stack.admin.post('/v1/tokens', { username: 'retry-pe@example.com', ttl_seconds: 600 }, k);
    const theirs = await other.post('/v1/tokens', { username: 'retry-pe@example.com', ttl_seconds: 600 }, k);
    expect(mine.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(theirs.headers.get('idempotent-replayed')).toBeNull();
    expect(theirs.body.data.token_id).not.toBe(mine.body.data.token_id);
  });

  it('two requests at once with one key: one runs, the other is told to retry (409) or gets its replay', async () => {
    // Creating a user with a password hashes it (scrypt, off the event loop), so the second
    // request arrives while the first is still running.
    const outcomes: number[] = [];
    for (let i = 0; i < 5; i++) {
      const k = key('race');
      const body = { username: `idem-race-${i}@example.com`, role: 'developer', password: 'correct horse battery staple' };
      const [a, b] = await Promise.all([stack.admin.post('/v1/users', body, k), stack.admin.post('/v1/users', body, k)]);
      const statuses = [a.status, b.status].sort();
      expect([[201, 201], [201, 409]]).toContainEqual(statuses);
      const conflict = [a, b].find((r) => r.status === 409);
      if (conflict) {
        expect(conflict.body).toMatchObject({ error: 'conflict' });
        expect(conflict.headers.get('retry-after')).toBe('1');
        // the retry it was told to make gets the first response
        const retry = await stack.admin.post('/v1/users', body, k);
        expect(retry.status).toBe(201);
        expect(retry.headers.get('idempotent-replayed')).toBe('true');
      } else {
        expect([a, b].filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(1);
      }
      outcomes.push(...statuses);
      // the user exists once
      const users = (await stack.admin.get('/v1/users')).body.data as Array<{ username: string }>;
      expect(users.filter((u) => u.username === body.username)).toHaveLength(1);
    }
    expect(outcomes).toContain(409);
  });

  it('session opens: a replay returns the same session and does not count against the rate limit', async () => {
    await stack.onlineDevice('idem-online');
    const k = key('session');
    const body = { device_id: 'idem-online', protocol: 'diagnostics' };
    const first = await pe.post('/v1/remote-access/sessions', body, k);
    expect(first.status).toBe(201);
    for (let i = 0; i < 40; i++) {
      const replay = await pe.post('/v1/remote-access/sessions', body, k);
      expect(replay.status).toBe(201);
      expect(replay.body.data.session_id).toBe(first.body.data.session_id);
    }
    // 40 replays in a minute, over the limit of 30 opens: none counted, and no second session
    const open = await pe.get('/v1/remote-access/sessions?device_id=idem-online&status=open');
    expect(open.body.data).toHaveLength(1);
    await pe.del(`/v1/remote-access/sessions/${first.body.data.session_id}`);
  });

  it('a malformed key is 400; fleet paths answer in their own envelope', async () => {
    const bad = await stack.admin.post('/v1/devices', { device_id: 'idem-5' }, { 'idempotency-key': 'has space' });
    expect(bad.status).toBe(400);
    expect(bad.body.details).toEqual([{ path: 'Idempotency-Key', message: expect.any(String) }]);
    expect((await stack.admin.get('/v1/devices/idem-5')).status).toBe(404);

    await stack.admin.post('/v1/users', { username: 'retry-fleet', role: null, kind: 'service' });
    const token = (await stack.admin.post('/v1/tokens', { username: 'retry-fleet', scopes: ['fleet:read', 'fleet:write'], tenants: ['acme'] })).body.data.token;
    const fleet = client(stack.url, token);
    const k = { 'x-tenant-id': 'acme', ...key('group') };
    const created = await fleet.post('/v1/fleet/groups', { name: 'Retry group' }, k);
    expect(created.status).toBe(201);
    const replay = await fleet.post('/v1/fleet/groups', { name: 'Retry group' }, k);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.group_id).toBe(created.body.data.group_id);
    const reused = await fleet.post('/v1/fleet/groups', { name: 'Another group' }, k);
    expect(reused.status).toBe(422);
    expect(reused.body).toMatchObject({ status: 'error', error: { code: 'IDEMPOTENCY_KEY_REUSED' } });
    // the tenant is part of the request: the same key and body for another tenant is another request
    const otherTenant = await fleet.post('/v1/fleet/groups', { name: 'Retry group' }, { ...k, 'x-tenant-id': 'globex' });
    expect(otherTenant.body).toMatchObject({ error: { code: 'IDEMPOTENCY_KEY_REUSED' } });

    const vk = { 'x-tenant-id': 'acme', ...key('vehicle') };
    const vehicle = await fleet.post('/v1/fleet/vehicles', { vin: '1HGCM82633A123456' }, vk);
    expect(vehicle.status).toBe(201);
    const vehicleAgain = await fleet.post('/v1/fleet/vehicles', { vin: '1HGCM82633A123456' }, vk);
    expect(vehicleAgain).toMatchObject({ status: 201, body: { data: { vehicle_id: vehicle.body.data.vehicle_id } } });
  });

  it('applying a spec twice with one key deploys once', async () => {
    const k = key('apply');
    const first = await apply(pe, serviceSpec({ name: 'idem-svc' }), k);
    expect(first.status).toBe(200);
    const again = await apply(pe, serviceSpec({ name: 'idem-svc' }), k);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    const history = await pe.get('/v1/services/idem-svc/revisions?env=dev');
    expect(history.body.meta.total).toBe(1);
    const audit = await stack.admin.get('/v1/audit/deployments?service=idem-svc');
    expect(audit.body.data.filter((e: { event: string }) => e.event === 'service.applied')).toHaveLength(1);
  });
});

describe('ETag and If-Match', () => {
  it('services: the tag survives the rollout and changes with a write; a stale If-Match is 412 with the current tag', async () => {
    const applied = await apply(pe, serviceSpec({ name: 'tagged' }));
    const tag = applied.headers.get('etag')!;
    expect(tag).toMatch(/^"[\w-]+"$/);
    await waitFor(async () => (await pe.get('/v1/services/tagged?env=dev')).body.data.status === 'healthy', 'tagged healthy');
    const read = await pe.get('/v1/services/tagged?env=dev');
    expect(read.headers.get('etag')).toBe(tag); // replicas becoming ready is no write

    const changed = await apply(pe, serviceSpec({ name: 'tagged', tag: '2.0.0' }), { 'if-match': tag });
    expect(changed.status).toBe(200);
    const newTag = changed.headers.get('etag')!;
    expect(newTag).not.toBe(tag);

    const stale = await apply(pe, serviceSpec({ name: 'tagged', tag: '3.0.0' }), { 'if-match': tag });
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ error: 'precondition_failed', status: 412 });
    expect(stale.headers.get('etag')).toBe(newTag);
    expect((await pe.get('/v1/services/tagged?env=dev')).body.data.current_revision).toBe('v2.0.0');

    expect((await pe.post('/v1/services/tagged/rollback?env=dev', {}, { 'if-match': tag })).status).toBe(412);
    expect((await pe.del('/v1/services/tagged?env=dev', { 'if-match': tag })).status).toBe(412);
    const rolled = await pe.post('/v1/services/tagged/rollback?env=dev', {}, { 'if-match': newTag });
    expect(rolled.status).toBe(200);
    const afterRollback = rolled.headers.get('etag')!;
    expect((await pe.del('/v1/services/tagged?env=dev', { 'if-match': 'W/' + afterRollback })).status).toBe(412); // weak never matches
    expect((await pe.del('/v1/services/tagged?env=dev', { 'if-match': `"other", ${afterRollback}` })).status).toBe(200);
  });

  it('If-Match on an apply that would create the service is 412; * matches any existing one', async () => {
    const create = await apply(pe, serviceSpec({ name: 'not-yet' }), { 'if-match': '*' });
    expect(create.status).toBe(412);
    expect(create.headers.get('etag')).toBeNull();
    expect((await pe.get('/v1/services/not-yet?env=dev')).status).toBe(404);
    expect((await apply(pe, serviceSpec({ name: 'not-yet' }))).status).toBe(200);
    expect((await apply(pe, serviceSpec({ name: 'not-yet', replicas: 3 }), { 'if-match': '*' })).status).toBe(200);
    // a dry run checks too, and changes no tag
    const before = (await pe.get('/v1/services/not-yet?env=dev')).headers.get('etag');
    expect((await apply(pe, serviceSpec({ name: 'not-yet', replicas: 4 }), { 'if-match': '"stale"' }, '&dry_run=true')).status).toBe(412);
    expect((await apply(pe, serviceSpec({ name: 'not-yet', replicas: 4 }), { 'if-match': before! }, '&dry_run=true')).status).toBe(200);
    expect((await pe.get('/v1/services/not-yet?env=dev')).headers.get('etag')).toBe(before);
  });

  it('canary state: weight, halt and promote check its tag', async () => {
    await apply(pe, serviceSpec({ name: 'tag-canary' }));
    await waitFor(async () => (await pe.get('/v1/services/tag-canary?env=dev')).body.data.status === 'healthy', 'tag-canary healthy');
    await apply(pe, serviceSpec({ name: 'tag-canary', tag: '2.0.0', strategy: 'canary', weight: 10 }));
    const state = await pe.get('/v1/services/tag-canary/canary?env=dev');
    const tag = state.headers.get('etag')!;
    const weighted = await pe.put('/v1/services/tag-canary/canary/weight?env=dev', { weight: 30 }, { 'if-match': tag });
    expect(weighted.status).toBe(200);
    const weightedTag = weighted.headers.get('etag')!;
    expect(weightedTag).not.toBe(tag);
    expect((await pe.get('/v1/services/tag-canary/canary?env=dev')).headers.get('etag')).toBe(weightedTag);

    const stale = await pe.put('/v1/services/tag-canary/canary/weight?env=dev', { weight: 50 }, { 'if-match': tag });
    expect(stale).toMatchObject({ status: 412, body: { error: 'precondition_failed' } });
    expect(stale.headers.get('etag')).toBe(weightedTag);
    expect((await pe.post('/v1/services/tag-canary/canary/halt?env=dev', undefined, { 'if-match': tag })).status).toBe(412);
    expect((await pe.post('/v1/services/tag-canary/canary/promote?env=dev', undefined, { 'if-match': tag })).status).toBe(412);
    expect((await pe.get('/v1/services/tag-canary/canary?env=dev')).body.data.canary.weight).toBe(30);

    await waitFor(async () => (await pe.get('/v1/services/tag-canary?env=dev')).body.data.replicas.ready === 2, 'canary replicas ready');
    const promoted = await pe.post('/v1/services/tag-canary/canary/promote?env=dev', undefined, { 'if-match': weightedTag });
    expect(promoted.status).toBe(200);
    expect(promoted.headers.get('etag')).toBe((await pe.get('/v1/services/tag-canary?env=dev')).headers.get('etag'));
  });

  it('devices: presence is no write; a new token is; a stale If-Match keeps the device', async () => {
    await stack.addDevice('tag-dev');
    const original = (await stack.admin.get('/v1/devices/tag-dev')).headers.get('etag')!;
    const rotated = await stack.admin.post('/v1/devices/tag-dev/agent-token', {}, { 'if-match': original });
    const tag = rotated.headers.get('etag')!;
    expect(tag).not.toBe(original); // a new token is a write
    expect((await stack.admin.get('/v1/devices/tag-dev')).headers.get('etag')).toBe(tag);
    const agent = stack.startAgent('tag-dev', rotated.body.data.agent_token);
    await stack.waitForStatus('tag-dev', 'online');
    const online = await stack.admin.get('/v1/devices/tag-dev');
    expect(online.body.data.agent_status).toBe('online');
    expect(online.headers.get('etag')).toBe(tag); // its agent coming online is not

    const stale = await stack.admin.del('/v1/devices/tag-dev', { 'if-match': original });
    expect(stale).toMatchObject({ status: 412, body: { error: 'precondition_failed' } });
    expect(stale.headers.get('etag')).toBe(tag);
    expect((await stack.admin.post('/v1/devices/tag-dev/agent-token', {}, { 'if-match': original })).status).toBe(412);
    expect((await stack.admin.get('/v1/devices/tag-dev')).status).toBe(200);
    expect((await stack.admin.del('/v1/devices/tag-dev', { 'if-match': tag })).status).toBe(200);
    await agent.stop();
  });

  it('groups: an assignment checks the tag of the group it goes to', async () => {
    await stack.admin.post('/v1/users', { username: 'tag-fleet', role: null, kind: 'service' });
    const token = (await stack.admin.post('/v1/tokens', { username: 'tag-fleet', scopes: ['fleet:read', 'fleet:write'], tenants: ['acme'] })).body.data.token;
    const fleet = client(stack.url, token);
    const t = { 'x-tenant-id': 'acme' };
    const group = await fleet.post('/v1/fleet/groups', { name: 'Tagged' }, t);
    const tag = group.headers.get('etag')!;
    expect((await fleet.get(`/v1/fleet/groups/${group.body.data.group_id}`, t)).headers.get('etag')).toBe(tag);
    const v1 = (await fleet.post('/v1/fleet/vehicles', { vin: '1HGCM82633A654321' }, t)).body.data.vehicle_id;
    const v2 = (await fleet.post('/v1/fleet/vehicles', { vin: '1HGCM82633A654322' }, t)).body.data.vehicle_id;
    const assign = (v: string, h: Record<string, string>) => fleet.put(`/v1/fleet/vehicles/${v}/group`, { group_id: group.body.data.group_id }, { ...t, ...h });
    expect((await assign(v1, { 'if-match': tag })).status).toBe(200);
    const stale = await assign(v2, { 'if-match': tag }); // the group gained a vehicle
    expect(stale.status).toBe(412);
    expect(stale.body).toMatchObject({ status: 'error', error: { code: 'PRECONDITION_FAILED' } });
    const current = (await fleet.get(`/v1/fleet/groups/${group.body.data.group_id}`, t)).headers.get('etag');
    expect(stale.headers.get('etag')).toBe(current);
    expect((await assign(v2, {})).status).toBe(200); // without If-Match, as before
  });
});

describe('POST /v1/devices/{id}/agent-token', () => {
  it('issues a new token: the old one stops working at once and its agent is disconnected', async () => {
    const { token: old, agent } = await stack.onlineDevice('rotate-1');
    const rotated = await stack.admin.post('/v1/devices/rotate-1/agent-token', {});
    expect(rotated.status).toBe(200);
    expect(rotated.body.data).toEqual({ device_id: 'rotate-1', agent_token: expect.any(String) });
    expect(rotated.body.data.agent_token).not.toBe(old);
    await stack.waitForStatus('rotate-1', 'offline');
    // the old agent is refused from now on (it keeps trying, quietly)
    await agent.waitForLine(/new agent token/);
    await agent.waitForLine(/"status":401/);
    expect(await stack.agentStatus('rotate-1')).toBe('offline');
    agent.kill();
    await agent.exited;

    const fresh = stack.startAgent('rotate-1', rotated.body.data.agent_token);
    await stack.waitForStatus('rotate-1', 'online');
    fresh.kill();
    await fresh.exited;
  });

  it('is for administrators; unknown devices are 404; a retry with its key gets the same token', async () => {
    await stack.addDevice('rotate-2');
    expect((await pe.post('/v1/devices/rotate-2/agent-token', {})).status).toBe(403);
    expect((await stack.admin.post('/v1/devices/nope/agent-token', {})).status).toBe(404);
    expect((await stack.admin.post('/v1/devices/rotate-2/agent-token', { x: 1 })).status).toBe(400);
    const k = key('rotate');
    const first = await stack.admin.post('/v1/devices/rotate-2/agent-token', {}, k);
    const again = await stack.admin.post('/v1/devices/rotate-2/agent-token', {}, k);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.agent_token).toBe(first.body.data.agent_token);
    const agent = stack.startAgent('rotate-2', first.body.data.agent_token);
    await stack.waitForStatus('rotate-2', 'online'); // the replay did not rotate it again
    agent.kill();
    await agent.exited;
  });
});
