/** The fleet interface end to end (seed 2.7, 2.8, 4.3, 5 rule 8, 7.2; CONTRACT 6). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetClients, fleetToken, tenantClient, VIN } from '../helpers/fleet';
import { client, type Client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';

let stack: Stack;
let acme: Client; // fleet:read + fleet:write on tenant acme
let globex: Client; // fleet:read + fleet:write on tenant globex
let reader: Client; // fleet:read only, acme

beforeAll(async () => {
  stack = await startStack();
  ({ acme, globex, reader } = await fleetClients(stack, 'fleet'));
});
afterAll(() => stack.stop());

function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toEqual({
    status: 'error',
    error: { code, message: expect.any(String), ...(res.body.error?.details ? { details: expect.any(Array) } : {}) },
    timestamp: expect.any(String),
    request_id: expect.any(String),
  });
}

describe('groups', () => {
  it('creates a group: 201 with the envelope and the request id sent', async () => {
    const res = await acme.post(
      '/v1/fleet/groups',
      { name: '  Berlin Delivery Vans  ', description: 'Urban last-mile', region: 'eu-central-1', tags: ['ev', 'urban', 'ev'] },
      { 'x-request-id': '3f1c2a4e-0000-4000-8000-000000000001' },
    );
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      status: 'success',
      data: {
        group_id: expect.stringMatching(/^grp_[a-z2-7]{20}$/),
        name: 'Berlin Delivery Vans',
        description: 'Urban last-mile',
        region: 'eu-central-1',
        tags: ['ev', 'urban'],
        vehicle_count: 0,
        created_at: expect.any(String),
        created_by: 'fleet-acme',
      },
      timestamp: expect.any(String),
      request_id: '3f1c2a4e-0000-4000-8000-000000000001',
    });
    const got = await acme.get(`/v1/fleet/groups/${res.body.data.group_id}`);
    expect(got.body.data).toEqual(res.body.data);
  });

  it('names are unique per tenant, ignoring case and surrounding spaces', async () => {
    expect((await acme.post('/v1/fleet/groups', { name: 'Trucks North' })).status).toBe(201);
    for (const name of ['trucks north', '  TRUCKS NORTH', 'Trucks North\t']) {
      expectError(await acme.post('/v1/fleet/groups', { name }), 409, 'GROUP_NAME_CONFLICT');
    }
    expect((await globex.post('/v1/fleet/groups', { name: 'Trucks North' })).status).toBe(201); // another tenant
    expect((await acme.post('/v1/fleet/groups', { name: 'Trucks North 2' })).status).toBe(201);
  });

  it('validates: missing name, blank, too long, wrong types, unknown fields', async () => {
    expectError(await acme.post('/v1/fleet/groups', { description: 'no name' }), 400, 'MISSING_REQUIRED_FIELD');
    expectError(await acme.post('/v1/fleet/groups', { name: null }), 400, 'MISSING_REQUIRED_FIELD');
    expectError(await acme.post('/v1/fleet/groups', { name: '   ' }), 400, 'VALIDATION_ERROR');
    expectError(await acme.post('/v1/fleet/groups', { name: 'x'.repeat(101) }), 400, 'VALIDATION_ERROR');
    expect((await acme.post('/v1/fleet/groups', { name: ` ${'y'.repeat(100)} ` })).status).toBe(201); // 100 after trimming
    expectError(await acme.post('/v1/fleet/groups', { name: 42 }), 400, 'VALIDATION_ERROR');
    expectError(await acme.post('/v1/fleet/groups', { name: 'ok', tags: 'ev' }), 400, 'VALIDATION_ERROR');
    expectError(await acme.post('/v1/fleet/groups', { name: 'ok', region: 'EU West' }), 400, 'VALIDATION_ERROR');
    const unknown = await acme.post('/v1/fleet/groups', { name: 'ok', colour: 'red' });
    expectError(unknown, 400, 'VALIDATION_ERROR');
    expect(unknown.body.error.details).toEqual([{ path: 'colour', message: 'unknown field' }]);
    expectError(await acme.raw('POST', '/v1/fleet/groups', '{"name":', { 'content-type': 'application/json' }), 400, 'VALIDATION_ERROR');
  });

  it('lists groups with pagination', async () => {
    const t = tenantClient(stack, await fleetToken(stack, 'fleet-pages', ['*'], ['pages']), 'pages');
    const empty = await t.get('/v1/fleet/groups');
    expect(empty.body.data).toEqual({ groups: [], pagination: { page: 1, limit: 20, total_records: 0, total_pages: 0 } });
    for (let i = 0; i < 5; i++) await t.post('/v1/fleet/groups', { name: `group ${i}` });
    const last = await t.get('/v1/fleet/groups?page=3&limit=2');
    expect(last.body.data.groups.map((g: { name: string }) => g.name)).toEqual(['group 4']);
    expect(last.body.data.pagination).toEqual({ page: 3, limit: 2, total_records: 5, total_pages: 3 });
    const past = await t.get('/v1/fleet/groups?page=9&limit=2');
    expect(past.body.data).toEqual({ groups: [], pagination: { page: 9, limit: 2, total_records: 5, total_pages: 3 } });
    for (const q of ['limit=0', 'limit=101', 'page=0', 'page=x', 'size=3', 'page=1&page=2']) {
      expectError(await t.get(`/v1/fleet/groups?${q}`), 400, 'VALIDATION_ERROR');
    }
  });
});

describe('vehicles', () => {
  it('registers vehicles with validated, tenant-unique VINs', async () => {
    const res = await acme.post('/v1/fleet/vehicles', { vin: VIN(1), vehicle_id: 'veh_van001' });
    expect(res.status).toBe(201);
    expect(res.body.data).toEqual({
      vehicle_id: 'veh_van001',
      vin: VIN(1),
      status: 'active',
      device_id: null,
      group_id: null,
      created_at: expect.any(String),
    });
    expect((await acme.post('/v1/fleet/vehicles', { vin: VIN(2) })).body.data.vehicle_id).toMatch(/^veh_[a-z2-7]{20}$/);
    expectError(await acme.post('/v1/fleet/vehicles', { vin: VIN(1) }), 409, 'VEHICLE_CONFLICT');
    expectError(await acme.post('/v1/fleet/vehicles', { vin: VIN(3), vehicle_id: 'veh_van001' }), 409, 'VEHICLE_CONFLICT');
    expect((await globex.post('/v1/fleet/vehicles', { vin: VIN(1), vehicle_id: 'veh_van001' })).status).toBe(201); // other tenant
    expectError(await acme.post('/v1/fleet/vehicles', {}), 400, 'MISSING_REQUIRED_FIELD');
    for (const vin of ['1HGCM82633A00000', '1HGCM82633A0000001', '1HGCM82633I000001', 'lowercasevin12345']) {
      expectError(await acme.post('/v1/fleet/vehicles', { vin }), 400, 'VALIDATION_ERROR');
    }
  });

  it('may name a registered device', async () => {
    await stack.addDevice('van-unit-7');
    const res = await acme.post('/v1/fleet/vehicles', { vin: VIN(7), device_id: 'van-unit-7' });
    expect(res.body.data.device_id).toBe('van-unit-7');
    expectError(await acme.post('/v1/fleet/vehicles', { vin: VIN(8), device_id: 'no-such-device' }), 400, 'VALIDATION_ERROR');
  });
});

describe('assignment', () => {
  it("assigns and moves vehicles, keeping both counts right; lists a group's vehicles", async () => {
    const a = (await acme.post('/v1/fleet/groups', { name: 'Move A' })).body.data.group_id;
    const b = (await acme.post('/v1/fleet/groups', { name: 'Move B' })).body.data.group_id;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await acme.post('/v1/fleet/vehicles', { vin: VIN(100 + i) })).body.data.vehicle_id);
    for (const id of ids) {
      const res = await acme.put(`/v1/fleet/vehicles/${id}/group`, { group_id: a });
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({
        vehicle_id: id,
        vin: expect.any(String),
        group_id: a,
        group_name: 'Move A',
        assigned_at: expect.any(String),
        assigned_by: 'fleet-acme',
      });
    }
    expect((await acme.get(`/v1/fleet/groups/${a}`)).body.data.vehicle_count).toBe(3);
    await acme.put(`/v1/fleet/vehicles/${ids[0]}/group`, { group_id: b });
    await acme.put(`/v1/fleet/vehicles/${ids[0]}/group`, { group_id: b }); // again: no change
    expect((await acme.get(`/v1/fleet/groups/${a}`)).body.data.vehicle_count).toBe(2);
    expect((await acme.get(`/v1/fleet/groups/${b}`)).body.data.vehicle_count).toBe(1);

    const listing = await acme.get(`/v1/fleet/groups/${a}/vehicles?limit=1&page=2`);
    expect(listing.body.data).toEqual({
      group_id: a,
      group_name: 'Move A',
      vehicles: [{ vehicle_id: expect.any(String), vin: expect.any(String), status: 'active', device_id: null }],
      pagination: { page: 2, limit: 1, total_records: 2, total_pages: 2 },
    });
    const empty = (await acme.post('/v1/fleet/groups', { name: 'Empty' })).body.data.group_id;
    expect((await acme.get(`/v1/fleet/groups/${empty}/vehicles`)).body.data).toEqual({
      group_id: empty,
      group_name: 'Empty',
      vehicles: [],
      pagination: { page: 1, limit: 20, total_records: 0, total_pages: 0 },
    });
    expect((await acme.get(`/v1/fleet/groups/${a}/vehicles?page=5`)).body.data.vehicles).toEqual([]);
  });

  it('404s unknown vehicles and groups, 400 without group_id', async () => {
    const g = (await acme.post('/v1/fleet/groups', { name: 'Errors' })).body.data.group_id;
    const v = (await acme.post('/v1/fleet/vehicles', { vin: VIN(200) })).body.data.vehicle_id;
    expectError(await acme.put('/v1/fleet/vehicles/veh_nope/group', { group_id: g }), 404, 'VEHICLE_NOT_FOUND');
    expectError(await acme.put(`/v1/fleet/vehicles/${v}/group`, { group_id: 'grp_nope' }), 404, 'GROUP_NOT_FOUND');
    expectError(await acme.put(`/v1/fleet/vehicles/${v}/group`, {}), 400, 'MISSING_REQUIRED_FIELD');
    expectError(await acme.get('/v1/fleet/groups/grp_nope'), 404, 'GROUP_NOT_FOUND');
    expectError(await acme.get('/v1/fleet/groups/grp_nope/vehicles'), 404, 'GROUP_NOT_FOUND');
  });

  it('concurrent assignments keep every count right', async () => {
    const groups: string[] = [];
    for (let i = 0; i < 3; i++) groups.push((await acme.post('/v1/fleet/groups', { name: `Race ${i}` })).body.data.group_id);
    const vehicles: string[] = [];
    for (let i = 0; i < 10; i++) vehicles.push((await acme.post('/v1/fleet/vehicles', { vin: VIN(300 + i) })).body.data.vehicle_id);
    const moves = Array.from({ length: 60 }, (_, i) => acme.put(`/v1/fleet/vehicles/${vehicles[i % 10]}/group`, { group_id: groups[(i * 7) % 3] }));
    expect((await Promise.all(moves)).every((r) => r.status === 200)).toBe(true);
    let total = 0;
    for (const g of groups) {
      const count = (await acme.get(`/v1/fleet/groups/${g}`)).body.data.vehicle_count;
      const members = (await acme.get(`/v1/fleet/groups/${g}/vehicles?limit=100`)).body.data.vehicles.length;
      expect(count).toBe(members);
      total += count;
    }
    expect(total).toBe(10);
  });
});

describe('tenants and scopes', () => {
  it("another tenant's groups and vehicles are 404, exactly like missing ones", async () => {
    const g = (await acme.post('/v1/fleet/groups', { name: 'Secret' })).body.data.group_id;
    const v = (await acme.post('/v1/fleet/vehicles', { vin: VIN(400) })).body.data.vehicle_id;
    const fromGlobex = await globex.get(`/v1/fleet/groups/${g}`);
    expectError(fromGlobex, 404, 'GROUP_NOT_FOUND');
    expect(fromGlobex.body.error.message).toBe((await globex.get('/v1/fleet/groups/grp_missing')).body.error.message.replace('grp_missing', g));
    expectError(await globex.get(`/v1/fleet/groups/${g}/vehicles`), 404, 'GROUP_NOT_FOUND');
    const gg = (await globex.post('/v1/fleet/groups', { name: 'Globex group' })).body.data.group_id;
    expectError(await globex.put(`/v1/fleet/vehicles/${v}/group`, { group_id: gg }), 404, 'VEHICLE_NOT_FOUND');
    expectError(await acme.put(`/v1/fleet/vehicles/${v}/group`, { group_id: gg }), 404, 'GROUP_NOT_FOUND');
    const names = (await globex.get('/v1/fleet/groups?limit=100')).body.data.groups.map((x: { name: string }) => x.name);
    expect(names).not.toContain('Secret');
  });

  it('a token granted only one tenant is refused for another', async () => {
    const acmeToken = (await stack.admin.post('/v1/tokens', { username: 'fleet-acme', scopes: ['fleet:read'], tenants: ['acme'] })).body.data.token;
    const asGlobex = tenantClient(stack, acmeToken, 'globex');
    expectError(await asGlobex.get('/v1/fleet/groups'), 403, 'TENANT_FORBIDDEN');
    expectError(await client(stack.url, acmeToken).get('/v1/fleet/groups'), 400, 'MISSING_TENANT_ID');
    expectError(await tenantClient(stack, acmeToken, 'bad tenant!').get('/v1/fleet/groups'), 400, 'VALIDATION_ERROR');
    expect((await tenantClient(stack, stack.adminToken, 'any-tenant').get('/v1/fleet/groups')).status).toBe(200); // tenants: *
  });

  it('writes need fleet:write and reads fleet:read: 403 INSUFFICIENT_SCOPE', async () => {
    expectError(await reader.post('/v1/fleet/groups', { name: 'Nope' }), 403, 'INSUFFICIENT_SCOPE');
    expectError(await reader.post('/v1/fleet/vehicles', { vin: VIN(500) }), 403, 'INSUFFICIENT_SCOPE');
    expectError(await reader.put('/v1/fleet/vehicles/veh_x/group', { group_id: 'grp_x' }), 403, 'INSUFFICIENT_SCOPE');
    expect((await reader.get('/v1/fleet/groups')).status).toBe(200);
    const writer = tenantClient(stack, await fleetToken(stack, 'fleet-writer', ['fleet:write'], ['acme']), 'acme');
    expect((await writer.post('/v1/fleet/groups', { name: 'Written' })).status).toBe(201);
    expectError(await writer.get('/v1/fleet/groups'), 403, 'INSUFFICIENT_SCOPE');
    // a session-interface token without scopes is refused too
    const plain = tenantClient(stack, await stack.userToken('no-scopes', 'administrator'), 'acme');
    expectError(await plain.get('/v1/fleet/groups'), 403, 'TENANT_FORBIDDEN');
  });

  it('401 UNAUTHORIZED in the fleet error shape', async () => {
    const anon = client(stack.url);
    expectError(await anon.get('/v1/fleet/groups', { 'x-tenant-id': 'acme' }), 401, 'UNAUTHORIZED');
    expectError(await client(stack.url, 'tth_wrong').get('/v1/fleet/groups', { 'x-tenant-id': 'acme' }), 401, 'UNAUTHORIZED');
  });
});
