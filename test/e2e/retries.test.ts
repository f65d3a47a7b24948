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
      expect([
        [201, 201],
        [201, 409],
      ]).toContainEqual(statuses);
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
    const tenants = ['acme', 'globex'];
    const token = (await stack.admin.post('/v1/tokens', { username: 'retry-fleet', scopes: ['fleet:read', 'fleet:write'], tenants })).body.data.token;
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
    // the tenant is part of the request: the same key and body for another tenant (one the token
    // holds: the tenant is checked before the key) is another request
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

describe('a replay is checked as the request itself would be', () => {
  const patch = (c: Client, path: string, body: unknown) => c.raw('PATCH', path, JSON.stringify(body), { 'content-type': 'application/json' });

  /** A service user with `role` and one token per grant, issued by the bootstrap administrator. */
  async function tokensOf(username: string, role: string | null, ...grants: Array<{ scopes: string[]; tenants?: string[] }>) {
    expect((await stack.admin.post('/v1/users', { username, role, kind: 'service' })).status).toBe(201);
    const tokens: Client[] = [];
    for (const grant of grants) {
      const issued = await stack.admin.post('/v1/tokens', { username, ...grant });
      expect(issued.status, issued.text).toBe(201);
      tokens.push(client(stack.url, issued.body.data.token));
    }
    return tokens;
  }

  /** The refusal `c` gets sending the request afresh (a new key), for comparing a refused replay with. */
  const fresh = (c: Client, path: string, body: unknown, headers: Record<string, string> = {}) => c.post(path, body, { ...headers, ...key('fresh') });
  const refusal = (r: { status: number; body: any }) => ({ status: r.status, error: r.body.error, message: r.body.message });

  it("POST /v1/tokens: a fleet:read token cannot replay the key its user's * token used (it would get a bearer token)", async () => {
    const [broad, narrow] = await tokensOf('idem-boss', 'administrator', { scopes: ['*'] }, { scopes: ['fleet:read'] });
    const k = key('mint');
    const body = { username: 'retry-pe@example.com', ttl_seconds: 600 };
    const minted = await broad!.post('/v1/tokens', body, k);
    expect(minted.status).toBe(201);
    const replay = await narrow!.post('/v1/tokens', body, k);
    expect(replay.status).toBe(403);
    expect(replay.text).not.toContain(minted.body.data.token);
    expect(replay.headers.get('idempotent-replayed')).toBeNull();
    expect(refusal(replay)).toEqual(refusal(await fresh(narrow!, '/v1/tokens', body)));
    // the token that made it still gets its replay
    const again = await broad!.post('/v1/tokens', body, k);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.token).toBe(minted.body.data.token);
  });

  it('POST /v1/devices/{id}/agent-token: a lower-privileged token of the same user cannot replay it (it would get the agent token)', async () => {
    await stack.addDevice('idem-rot');
    const [broad, reader] = await tokensOf('idem-ops', 'administrator', { scopes: ['*'] }, { scopes: ['devices:read'] });
    const k = key('rot');
    const rotated = await broad!.post('/v1/devices/idem-rot/agent-token', {}, k);
    expect(rotated.status).toBe(200);
    const replay = await reader!.post('/v1/devices/idem-rot/agent-token', {}, k);
    expect(replay.status).toBe(403);
    expect(replay.text).not.toContain(rotated.body.data.agent_token);
    expect(refusal(replay)).toEqual(refusal(await fresh(reader!, '/v1/devices/idem-rot/agent-token', {})));
    const again = await broad!.post('/v1/devices/idem-rot/agent-token', {}, k);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.agent_token).toBe(rotated.body.data.agent_token);
  });

  it("POST /v1/fleet/groups: a token without the tenant cannot replay another token's group creation in it", async () => {
    const [acme, globex] = await tokensOf(
      'idem-fleet',
      null,
      { scopes: ['fleet:read', 'fleet:write'], tenants: ['acme'] },
      { scopes: ['fleet:read', 'fleet:write'], tenants: ['globex'] },
    );
    const k = { 'x-tenant-id': 'acme', ...key('tenant') };
    const created = await acme!.post('/v1/fleet/groups', { name: 'Acme only' }, k);
    expect(created.status).toBe(201);
    const replay = await globex!.post('/v1/fleet/groups', { name: 'Acme only' }, k);
    expect(replay.status).toBe(403);
    expect(replay.body).toMatchObject({ status: 'error', error: { code: 'TENANT_FORBIDDEN' } });
    expect(replay.text).not.toContain(created.body.data.group_id);
    const freshly = await fresh(globex!, '/v1/fleet/groups', { name: 'Acme only' }, { 'x-tenant-id': 'acme' });
    expect(replay.body.error).toEqual(freshly.body.error);
    const again = await acme!.post('/v1/fleet/groups', { name: 'Acme only' }, k);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data.group_id).toBe(created.body.data.group_id);
  });

  it('keys are per token: two tokens of one user with one key each get their own result', async () => {
    const [laptop, ci] = await tokensOf('idem-twice', 'administrator', { scopes: ['*'] }, { scopes: ['*'] });
    const k = key('per-token');
    const body = { username: 'retry-pe@example.com', ttl_seconds: 600 };
    const first = await laptop!.post('/v1/tokens', body, k);
    const second = await ci!.post('/v1/tokens', body, k);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect(second.body.data.token_id).not.toBe(first.body.data.token_id);
  });

  it("once the user's role is lowered, its own token's replay is refused exactly as the request afresh", async () => {
    await stack.addDevice('idem-demoted');
    const [token] = await tokensOf('idem-demoted', 'administrator', { scopes: ['*'] });
    const mint = key('demoted-mint');
    const rotate = key('demoted-rotate');
    const body = { username: 'retry-pe@example.com', ttl_seconds: 600 };
    expect((await token!.post('/v1/tokens', body, mint)).status).toBe(201);
    expect((await token!.post('/v1/devices/idem-demoted/agent-token', {}, rotate)).status).toBe(200);
    expect((await patch(stack.admin, '/v1/users/idem-demoted', { role: 'developer' })).status).toBe(200);
    const replays = [await token!.post('/v1/tokens', body, mint), await token!.post('/v1/devices/idem-demoted/agent-token', {}, rotate)];
    expect(replays.map(refusal)).toEqual([
      refusal(await fresh(token!, '/v1/tokens', body)),
      refusal(await fresh(token!, '/v1/devices/idem-demoted/agent-token', {})),
    ]);
    expect(replays.map((r) => r.status)).toEqual([403, 403]);
  });

  it('session opens (checked in the handler): replayed only while the role that opened it holds', async () => {
    await stack.onlineDevice('idem-shell');
    const [token] = await tokensOf('idem-shell-pe', 'platform-engineer', { scopes: ['*'] });
    const k = key('shell');
    const body = { device_id: 'idem-shell', protocol: 'shell' };
    const opened = await token!.post('/v1/remote-access/sessions', body, k);
    expect(opened.status, opened.text).toBe(201);
    expect((await token!.post('/v1/remote-access/sessions', body, k)).headers.get('idempotent-replayed')).toBe('true');
    expect((await patch(stack.admin, '/v1/users/idem-shell-pe', { role: 'developer' })).status).toBe(200);
    const replay = await token!.post('/v1/remote-access/sessions', body, k);
    expect(replay.status).toBe(403);
    expect(replay.body.error).toBe('forbidden');
    expect(replay.text).not.toContain(opened.body.data.session_id);
    expect((await fresh(token!, '/v1/remote-access/sessions', body)).status).toBe(403);
    await stack.admin.del(`/v1/remote-access/sessions/${opened.body.data.session_id}`);
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
    await agent.waitForLine(/replaced this device.s agent token/);
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
