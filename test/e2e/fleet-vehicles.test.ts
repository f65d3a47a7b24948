/**
 * A tenant's vehicles one by one (docs/http-api.md, fleet groups): listed (all, in no group, by
 * VIN), read with an ETag, taken out of their group and deleted (with If-Match), each scoped to the
 * tenant and answered in the fleet envelope; the groups' counts follow, also under concurrent writes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fleetClients, VIN } from '../helpers/fleet';
import type { Client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';

let stack: Stack;
let acme: Client;
let globex: Client;
let reader: Client;

function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.body).toMatchObject({
    status: 'error',
    error: { code, message: expect.any(String) },
    timestamp: expect.any(String),
    request_id: expect.any(String),
  });
}

const count = async (groupId: string) => (await acme.get(`/v1/fleet/groups/${groupId}`)).body.data.vehicle_count as number;

beforeAll(async () => {
  stack = await startStack();
  ({ acme, globex, reader } = await fleetClients(stack, 'fv'));
});
afterAll(() => stack.stop());

describe('listing vehicles', () => {
  it('lists all, those in no group (unassigned=true) and the one with a VIN, with device and group', async () => {
    await stack.addDevice('fv-unit-1');
    const group = (await acme.post('/v1/fleet/groups', { name: 'Listed' })).body.data.group_id;
    const registered = await acme.post('/v1/fleet/vehicles', { vin: VIN(1), vehicle_id: 'veh_list1', device_id: 'fv-unit-1' });
    expect(registered.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    await acme.post('/v1/fleet/vehicles', { vin: VIN(2), vehicle_id: 'veh_list2' });
    await acme.post('/v1/fleet/vehicles', { vin: VIN(3), vehicle_id: 'veh_list3' });
    await acme.put('/v1/fleet/vehicles/veh_list1/group', { group_id: group });
    await globex.post('/v1/fleet/vehicles', { vin: VIN(4), vehicle_id: 'veh_other' });

    const all = await acme.get('/v1/fleet/vehicles');
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ status: 'success', data: { pagination: { page: 1, limit: 20, total_records: 3, total_pages: 1 } } });
    expect(all.body.data.vehicles).toEqual([
      { vehicle_id: 'veh_list1', vin: VIN(1), status: 'active', device_id: 'fv-unit-1', group_id: group, created_at: expect.any(String) },
      { vehicle_id: 'veh_list2', vin: VIN(2), status: 'active', device_id: null, group_id: null, created_at: expect.any(String) },
      { vehicle_id: 'veh_list3', vin: VIN(3), status: 'active', device_id: null, group_id: null, created_at: expect.any(String) },
    ]);
    const unassigned = await acme.get('/v1/fleet/vehicles?unassigned=true&limit=1&page=2');
    expect(unassigned.body.data.vehicles.map((v: { vehicle_id: string }) => v.vehicle_id)).toEqual(['veh_list3']);
    expect(unassigned.body.data.pagination).toEqual({ page: 2, limit: 1, total_records: 2, total_pages: 2 });
    expect((await acme.get('/v1/fleet/vehicles?unassigned=false')).body.data.pagination.total_records).toBe(3);
    expect((await acme.get(`/v1/fleet/vehicles?vin=${VIN(2)}`)).body.data.vehicles.map((v: { vehicle_id: string }) => v.vehicle_id)).toEqual(['veh_list2']);
    expect((await acme.get(`/v1/fleet/vehicles?vin=${VIN(4)}`)).body.data).toEqual({
      vehicles: [],
      pagination: { page: 1, limit: 20, total_records: 0, total_pages: 0 },
    });
    // a group's listing shows the device too
    expect((await acme.get(`/v1/fleet/groups/${group}/vehicles`)).body.data.vehicles).toEqual([
      { vehicle_id: 'veh_list1', vin: VIN(1), status: 'active', device_id: 'fv-unit-1' },
    ]);
    for (const q of ['unassigned=yes', 'vin=short', 'vin=1HGCM82633I000001', 'limit=0', 'group=none']) {
      expectError(await acme.get(`/v1/fleet/vehicles?${q}`), 400, 'VALIDATION_ERROR');
    }
    expect((await reader.get('/v1/fleet/vehicles')).status).toBe(200);
  });

  it('reads one vehicle with its ETag; another tenant gets 404', async () => {
    await acme.post('/v1/fleet/vehicles', { vin: VIN(10), vehicle_id: 'veh_read1' });
    const got = await acme.get('/v1/fleet/vehicles/veh_read1');
    expect(got.body).toMatchObject({ status: 'success', data: { vehicle_id: 'veh_read1', vin: VIN(10), group_id: null } });
    expect(got.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    expectError(await globex.get('/v1/fleet/vehicles/veh_read1'), 404, 'VEHICLE_NOT_FOUND');
    expectError(await acme.get('/v1/fleet/vehicles/veh_nope'), 404, 'VEHICLE_NOT_FOUND');
  });
});

describe('unassigning', () => {
  it('takes a vehicle out of its group (the count follows), with If-Match on the vehicle', async () => {
    const group = (await acme.post('/v1/fleet/groups', { name: 'Unassign' })).body.data.group_id;
    await acme.post('/v1/fleet/vehicles', { vin: VIN(20), vehicle_id: 'veh_out1' });
    const before = await acme.get('/v1/fleet/vehicles/veh_out1');
    await acme.put('/v1/fleet/vehicles/veh_out1/group', { group_id: group });
    expect(await count(group)).toBe(1);

    const stale = await acme.del('/v1/fleet/vehicles/veh_out1/group', { 'if-match': before.headers.get('etag')! });
    expectError(stale, 412, 'PRECONDITION_FAILED');
    const current = stale.headers.get('etag')!;
    expect(current).toBe((await acme.get('/v1/fleet/vehicles/veh_out1')).headers.get('etag'));
    expect(await count(group)).toBe(1);

    const out = await acme.del('/v1/fleet/vehicles/veh_out1/group', { 'if-match': current });
    expect(out.status).toBe(200);
    expect(out.body.data).toMatchObject({ vehicle_id: 'veh_out1', group_id: null });
    expect(out.headers.get('etag')).not.toBe(current);
    expect(await count(group)).toBe(0);
    expect((await acme.get(`/v1/fleet/groups/${group}/vehicles`)).body.data.vehicles).toEqual([]);
    // again: nothing to take it out of, answered as it is
    const again = await acme.del('/v1/fleet/vehicles/veh_out1/group');
    expect(again.body.data.group_id).toBeNull();
    expect(await count(group)).toBe(0);

    expectError(await globex.del('/v1/fleet/vehicles/veh_out1/group'), 404, 'VEHICLE_NOT_FOUND');
    expectError(await reader.del('/v1/fleet/vehicles/veh_out1/group'), 403, 'INSUFFICIENT_SCOPE');
  });
});

describe('deleting', () => {
  it('deletes with If-Match (stale: 412, nothing deleted); its group counts one fewer; the VIN is free again', async () => {
    const group = (await acme.post('/v1/fleet/groups', { name: 'Delete' })).body.data.group_id;
    await acme.post('/v1/fleet/vehicles', { vin: VIN(30), vehicle_id: 'veh_gone1' });
    const before = (await acme.get('/v1/fleet/vehicles/veh_gone1')).headers.get('etag')!;
    await acme.put('/v1/fleet/vehicles/veh_gone1/group', { group_id: group });

    expectError(await globex.del('/v1/fleet/vehicles/veh_gone1'), 404, 'VEHICLE_NOT_FOUND'); // another tenant's
    expectError(await reader.del('/v1/fleet/vehicles/veh_gone1'), 403, 'INSUFFICIENT_SCOPE');
    const stale = await acme.del('/v1/fleet/vehicles/veh_gone1', { 'if-match': before });
    expectError(stale, 412, 'PRECONDITION_FAILED');
    expect((await acme.get('/v1/fleet/vehicles/veh_gone1')).status).toBe(200);
    expect(await count(group)).toBe(1);

    const gone = await acme.del('/v1/fleet/vehicles/veh_gone1', { 'if-match': stale.headers.get('etag')! });
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ status: 'success', data: { vehicle_id: 'veh_gone1', vin: VIN(30), group_id: group, deleted: true } });
    expectError(await acme.get('/v1/fleet/vehicles/veh_gone1'), 404, 'VEHICLE_NOT_FOUND');
    expectError(await acme.del('/v1/fleet/vehicles/veh_gone1'), 404, 'VEHICLE_NOT_FOUND');
    expect(await count(group)).toBe(0);
    expect((await acme.post('/v1/fleet/vehicles', { vin: VIN(30), vehicle_id: 'veh_gone1' })).status).toBe(201);
  });

  it('concurrent deletes, unassigns and moves keep every count right', async () => {
    const groups: string[] = [];
    for (let i = 0; i < 2; i++) groups.push((await acme.post('/v1/fleet/groups', { name: `Churn ${i}` })).body.data.group_id);
    const ids = Array.from({ length: 8 }, (_, i) => `veh_churn${i}`);
    for (const [i, id] of ids.entries()) {
      await acme.post('/v1/fleet/vehicles', { vin: VIN(40 + i), vehicle_id: id });
      await acme.put(`/v1/fleet/vehicles/${id}/group`, { group_id: groups[i % 2] });
    }
    const writes = ids.flatMap((id, i) => [
      acme.put(`/v1/fleet/vehicles/${id}/group`, { group_id: groups[(i + 1) % 2] }),
      acme.del(`/v1/fleet/vehicles/${id}/group`),
      i % 2 === 0 ? acme.del(`/v1/fleet/vehicles/${id}`) : acme.put(`/v1/fleet/vehicles/${id}/group`, { group_id: groups[i % 2] }),
    ]);
    for (const res of await Promise.all(writes)) expect([200, 404]).toContain(res.status);
    for (const g of groups) {
      const members = (await acme.get(`/v1/fleet/groups/${g}/vehicles?limit=100`)).body.data.vehicles.length;
      expect(await count(g)).toBe(members);
    }
    expect(
      (await acme.get('/v1/fleet/vehicles?limit=100')).body.data.vehicles.filter((v: { vehicle_id: string }) => v.vehicle_id.startsWith('veh_churn')),
    ).toHaveLength(4);
  });
});
