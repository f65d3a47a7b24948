/**
 * Fleet groups and vehicles (api/fleet/fleet.ts) on a real store (SQLite, or PostgreSQL): names
 * compared as the docs say (trimmed, NFC, case-insensitive) and unique per tenant, every id
 * resolved within the caller's tenant (another tenant's group is a 404 like a missing one), a
 * vehicle tied only to a registered device, assignment moving the counts and checked against the
 * group's tag (also by peers at once), and pages.
 */
import { describe, expect, it } from 'vitest';
import { createFleet } from '../../../../api/fleet/fleet';
import { ifMatch } from '../../../../api/preconditions';
import { openStore } from '../../../../api/store/index';
import { failure, freshStoreLocation, onPostgres, storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const VIN = (n: number) => `1HGCM82633A${String(n).padStart(6, '0')}`;

describe('fleet', () => {
  const store = storeForEachTest();
  let clock = T0;
  const fleet = () => createFleet(store, () => clock);

  describe('groups', () => {
    it('are created with the name trimmed and normalised, the tags without repeats, and who made them when', async () => {
      clock = T0;
      const g = await fleet().createGroup('acme', 'fleet-bot', { name: '  Cafe\u0301 Vans ', tags: ['ev', 'van', 'ev'], region: 'eu-west-1' });
      expect(g).toEqual({
        group_id: expect.stringMatching(/^grp_[a-z2-7]{20}$/),
        name: 'Café Vans',
        description: null,
        region: 'eu-west-1',
        tags: ['ev', 'van'],
        vehicle_count: 0,
        created_at: '2026-03-01T10:00:00.000Z',
        created_by: 'fleet-bot',
      });
      expect(await fleet().getGroup('acme', g.group_id)).toEqual(g);
    });

    it('are unique by name within a tenant, whatever the case, spacing or composition; another tenant may reuse it', async () => {
      const f = fleet();
      await f.createGroup('acme', 'bot', { name: 'Café Vans' });
      for (const name of ['café vans', ' CAFÉ VANS ', 'Cafe\u0301 Vans']) {
        expect(await failure(() => f.createGroup('acme', 'bot', { name }))).toMatchObject({ code: 'GROUP_NAME_CONFLICT', status: 409 });
      }
      expect((await f.createGroup('globex', 'bot', { name: 'Café Vans' })).name).toBe('Café Vans');
      expect((await f.listGroups('acme', { page: 1, limit: 10 })).pagination.total_records).toBe(1);
    });

    it('of another tenant are not found, exactly like groups that do not exist', async () => {
      const f = fleet();
      const g = await f.createGroup('acme', 'bot', { name: 'Vans' });
      const theirs = await failure(() => f.getGroup('globex', g.group_id));
      const missing = await failure(() => f.getGroup('globex', 'grp_nonexistent'));
      expect(theirs).toMatchObject({ code: 'GROUP_NOT_FOUND', status: 404 });
      expect(missing).toMatchObject({ code: 'GROUP_NOT_FOUND', status: 404 });
      expect(await f.groupTag('globex', g.group_id)).toBeUndefined();
      expect((await f.listGroups('globex', { page: 1, limit: 10 })).groups).toEqual([]);
    });

    it('are listed in pages with the totals', async () => {
      const f = fleet();
      for (let i = 0; i < 5; i++) await f.createGroup('acme', 'bot', { name: `Group ${i}` });
      const page = await f.listGroups('acme', { page: 2, limit: 2 });
      expect(page.groups).toHaveLength(2);
      expect(page.pagination).toEqual({ page: 2, limit: 2, total_records: 5, total_pages: 3 });
      expect((await f.listGroups('acme', { page: 4, limit: 2 })).groups).toEqual([]);
    });
  });

  describe('vehicles', () => {
    it('may name only a registered device', async () => {
      const f = fleet();
      const err = await failure(() => f.registerVehicle('acme', { vin: VIN(1), device_id: 'cam-7' }));
      expect(err).toMatchObject({ code: 'VALIDATION_ERROR', status: 400, details: [{ path: 'device_id', message: 'must name a registered device' }] });
      await store.devices.insert('cam-7', 'h'.repeat(64), {}, new Date(T0).toISOString());
      expect(await f.registerVehicle('acme', { vin: VIN(1), device_id: 'cam-7' })).toMatchObject({ vin: VIN(1), device_id: 'cam-7', group_id: null });
    });

    it('are unique by VIN and by id within a tenant, not across tenants', async () => {
      const f = fleet();
      const v = await f.registerVehicle('acme', { vin: VIN(1) });
      expect(v.vehicle_id).toMatch(/^veh_[a-z2-7]{20}$/);
      expect(await failure(() => f.registerVehicle('acme', { vin: VIN(1) }))).toMatchObject({ code: 'VEHICLE_CONFLICT', status: 409 });
      expect(await failure(() => f.registerVehicle('acme', { vin: VIN(2), vehicle_id: v.vehicle_id }))).toMatchObject({ code: 'VEHICLE_CONFLICT' });
      expect((await f.registerVehicle('globex', { vin: VIN(1), vehicle_id: v.vehicle_id })).vehicle_id).toBe(v.vehicle_id);
    });
  });

  describe('assignment', () => {
    it('moves a vehicle between groups, keeping both counts, and records who did it when', async () => {
      const f = fleet();
      const vans = await f.createGroup('acme', 'bot', { name: 'Vans' });
      const trucks = await f.createGroup('acme', 'bot', { name: 'Trucks' });
      const v = await f.registerVehicle('acme', { vin: VIN(1) });
      clock = T0 + 60_000;
      expect(await f.assign('acme', 'ops-ann', v.vehicle_id, vans.group_id)).toEqual({
        vehicle_id: v.vehicle_id,
        vin: VIN(1),
        group_id: vans.group_id,
        group_name: 'Vans',
        assigned_at: '2026-03-01T10:01:00.000Z',
        assigned_by: 'ops-ann',
      });
      await f.assign('acme', 'ops-bob', v.vehicle_id, trucks.group_id);
      expect((await f.getGroup('acme', vans.group_id)).vehicle_count).toBe(0);
      expect((await f.getGroup('acme', trucks.group_id)).vehicle_count).toBe(1);
      expect((await f.groupVehicles('acme', trucks.group_id, { page: 1, limit: 10 })).vehicles).toEqual([
        { vehicle_id: v.vehicle_id, vin: VIN(1), status: 'active', device_id: null },
      ]);
      expect((await f.groupVehicles('acme', vans.group_id, { page: 1, limit: 10 })).vehicles).toEqual([]);
    });

    it('finds neither a vehicle nor a group of another tenant', async () => {
      const f = fleet();
      const ours = await f.createGroup('acme', 'bot', { name: 'Vans' });
      const theirs = await f.createGroup('globex', 'bot', { name: 'Vans' });
      const v = await f.registerVehicle('acme', { vin: VIN(1) });
      const w = await f.registerVehicle('globex', { vin: VIN(2) });
      expect(await failure(() => f.assign('acme', 'bot', v.vehicle_id, theirs.group_id))).toMatchObject({ code: 'GROUP_NOT_FOUND', status: 404 });
      expect(await failure(() => f.assign('acme', 'bot', w.vehicle_id, ours.group_id))).toMatchObject({ code: 'VEHICLE_NOT_FOUND', status: 404 });
      expect((await f.getGroup('acme', ours.group_id)).vehicle_count).toBe(0);
      expect((await f.getGroup('globex', theirs.group_id)).vehicle_count).toBe(0);
    });

    it("is checked against the group's tag, which an assignment changes: a stale If-Match is 412 and moves nothing", async () => {
      const f = fleet();
      const g = await f.createGroup('acme', 'bot', { name: 'Vans' });
      const [a, b] = [await f.registerVehicle('acme', { vin: VIN(1) }), await f.registerVehicle('acme', { vin: VIN(2) })];
      const read = (await f.groupTag('acme', g.group_id))!;
      await f.assign('acme', 'bot', a.vehicle_id, g.group_id, ifMatch(read));
      const now = (await f.groupTag('acme', g.group_id))!;
      expect(now).not.toBe(read);
      const stale = await failure(() => f.assign('acme', 'bot', b.vehicle_id, g.group_id, ifMatch(read)));
      expect(stale).toMatchObject({ code: 'precondition_failed', status: 412, headers: { ETag: now } });
      expect((await f.getGroup('acme', g.group_id)).vehicle_count).toBe(1);
      await f.assign('acme', 'bot', b.vehicle_id, g.group_id, ifMatch(now));
      expect((await f.getGroup('acme', g.group_id)).vehicle_count).toBe(2);
    });

    it('lets only one of two moves made at once with the same tag through, whichever peer takes each', async () => {
      const location = await freshStoreLocation();
      const first = await openStore(location);
      const second = onPostgres ? await openStore(location) : first;
      try {
        const [f, other] = [createFleet(first, () => clock), createFleet(second, () => clock)];
        const g = await f.createGroup('acme', 'bot', { name: 'Vans' });
        const [a, b] = [await f.registerVehicle('acme', { vin: VIN(1) }), await f.registerVehicle('acme', { vin: VIN(2) })];
        const read = (await f.groupTag('acme', g.group_id))!;
        const outcomes = await Promise.allSettled([
          f.assign('acme', 'bot', a.vehicle_id, g.group_id, ifMatch(read)),
          other.assign('acme', 'bot', b.vehicle_id, g.group_id, ifMatch(read)),
        ]);
        expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
        const refused = outcomes.find((o) => o.status === 'rejected');
        expect(refused?.reason).toMatchObject({ code: 'precondition_failed', status: 412 });
        expect((await f.getGroup('acme', g.group_id)).vehicle_count).toBe(1);
      } finally {
        if (second !== first) await second.close();
        await first.close();
      }
    });

    it("lists a group's vehicles in pages, with the group's count as the total", async () => {
      const f = fleet();
      const g = await f.createGroup('acme', 'bot', { name: 'Vans' });
      for (let i = 0; i < 3; i++) await f.assign('acme', 'bot', (await f.registerVehicle('acme', { vin: VIN(i) })).vehicle_id, g.group_id);
      const page = await f.groupVehicles('acme', g.group_id, { page: 2, limit: 2 });
      expect(page).toMatchObject({ group_id: g.group_id, group_name: 'Vans', pagination: { page: 2, limit: 2, total_records: 3, total_pages: 2 } });
      expect(page.vehicles).toHaveLength(1);
    });
  });
});
