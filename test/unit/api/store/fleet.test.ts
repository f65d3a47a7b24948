/** The fleet repository: everything scoped to one tenant, group names and VINs unique per tenant, and assignment moving a vehicle with both group counts kept right in one transaction. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { GroupRow } from '../../../../api/store/fleet';
import { isUniqueViolation } from '../../../../api/store/index';
import { failure, storeForEachTest } from '../../../helpers/store';

const t = (hhmm: string) => `2026-01-01T${hhmm}:00.000Z`;

const group = (tenant_id: string, group_id: string, over: Partial<GroupRow> = {}): GroupRow => ({
  tenant_id,
  group_id,
  name: `Group ${group_id}`,
  name_key: `group ${group_id}`,
  description: null,
  region: null,
  tags: '[]',
  vehicle_count: 0,
  created_at: t('00:00'),
  created_by: 'fleet-bot',
  ...over,
});

const vehicle = (tenant_id: string, vehicle_id: string, vin: string) => ({ tenant_id, vehicle_id, vin, device_id: null, created_at: t('00:00') });

describe('fleet repository', () => {
  const store = storeForEachTest();

  describe('groups', () => {
    it('stores a group and finds it only in its tenant', () => {
      const row = group('acme', 'g1', { name: 'Berlin Vans', name_key: 'berlin vans', description: 'EVs', region: 'eu-central-1', tags: '["ev","van"]' });
      store.fleet.insertGroup(row);
      expect(store.fleet.group('acme', 'g1')).toEqual(row);
      expect(JSON.parse(store.fleet.group('acme', 'g1')!.tags)).toEqual(['ev', 'van']);
      expect(store.fleet.group('globex', 'g1')).toBeUndefined();
    });

    it('refuses a second group with the same name key in a tenant, not in another tenant', () => {
      store.fleet.insertGroup(group('acme', 'g1', { name: 'Berlin Vans', name_key: 'berlin vans' }));
      const err = failure(() => store.fleet.insertGroup(group('acme', 'g2', { name: ' BERLIN VANS ', name_key: 'berlin vans' })));
      expect(isUniqueViolation(err)).toBe(true);
      expect(store.fleet.group('acme', 'g2')).toBeUndefined();
      store.fleet.insertGroup(group('globex', 'g2', { name: 'Berlin Vans', name_key: 'berlin vans' }));
      // the same group id in another tenant is another group
      store.fleet.insertGroup(group('globex', 'g1'));
      expect(store.fleet.groups('globex', 10, 0).total).toBe(2);
    });

    it("lists a tenant's groups oldest first (id breaking ties), paged, with the tenant's total", () => {
      store.fleet.insertGroup(group('acme', 'g-c', { created_at: t('00:02') }));
      store.fleet.insertGroup(group('acme', 'g-b', { created_at: t('00:01') }));
      store.fleet.insertGroup(group('acme', 'g-a', { created_at: t('00:02') }));
      store.fleet.insertGroup(group('globex', 'g-z', { created_at: t('00:00') }));
      const ids = (tenant: string, limit: number, offset: number) => {
        const { items, total } = store.fleet.groups(tenant, limit, offset);
        return { ids: items.map((g) => g.group_id), total };
      };
      expect(ids('acme', 10, 0)).toEqual({ ids: ['g-b', 'g-a', 'g-c'], total: 3 });
      expect(ids('acme', 2, 1)).toEqual({ ids: ['g-a', 'g-c'], total: 3 });
      expect(ids('globex', 10, 0)).toEqual({ ids: ['g-z'], total: 1 });
      expect(ids('initech', 10, 0)).toEqual({ ids: [], total: 0 });
    });
  });

  describe('vehicles', () => {
    const VIN = '1HGCM82633A004352';

    it('registers an active, unassigned vehicle found only in its tenant', () => {
      store.fleet.insertVehicle({ ...vehicle('acme', 'v1', VIN), device_id: 'dev-7' });
      expect(store.fleet.vehicle('acme', 'v1')).toEqual({
        tenant_id: 'acme',
        vehicle_id: 'v1',
        vin: VIN,
        status: 'active',
        device_id: 'dev-7',
        group_id: null,
        assigned_at: null,
        assigned_by: null,
        created_at: t('00:00'),
      });
      expect(store.fleet.vehicle('globex', 'v1')).toBeUndefined();
    });

    it('refuses a VIN or a vehicle id used twice in a tenant, and allows both in another tenant', () => {
      store.fleet.insertVehicle(vehicle('acme', 'v1', VIN));
      expect(isUniqueViolation(failure(() => store.fleet.insertVehicle(vehicle('acme', 'v2', VIN))))).toBe(true);
      expect(isUniqueViolation(failure(() => store.fleet.insertVehicle(vehicle('acme', 'v1', '2HGCM82633A004352'))))).toBe(true);
      store.fleet.insertVehicle(vehicle('globex', 'v1', VIN));
      expect(store.fleet.vehicle('globex', 'v1')?.vin).toBe(VIN);
      expect(store.fleet.vehicle('acme', 'v2')).toBeUndefined();
    });
  });

  describe('assign', () => {
    beforeEach(() => {
      store.fleet.insertGroup(group('acme', 'g1'));
      store.fleet.insertGroup(group('acme', 'g2'));
      store.fleet.insertGroup(group('globex', 'g3'));
      store.fleet.insertVehicle(vehicle('acme', 'v1', '1HGCM82633A004352'));
      store.fleet.insertVehicle(vehicle('acme', 'v2', '1HGCM82633A004353'));
    });
    const counts = () => [store.fleet.group('acme', 'g1')!.vehicle_count, store.fleet.group('acme', 'g2')!.vehicle_count];

    it('puts a vehicle in a group, moves it, and both counts follow', () => {
      const assigned = store.fleet.assign('acme', 'v1', 'g1', t('01:00'), 'ann');
      expect(assigned).toMatchObject({ vehicle_id: 'v1', group_id: 'g1', assigned_at: t('01:00'), assigned_by: 'ann' });
      store.fleet.assign('acme', 'v2', 'g1', t('01:01'), 'ann');
      expect(counts()).toEqual([2, 0]);
      expect(store.fleet.assign('acme', 'v1', 'g2', t('02:00'), 'bob')).toMatchObject({ group_id: 'g2', assigned_at: t('02:00'), assigned_by: 'bob' });
      expect(counts()).toEqual([1, 1]);
    });

    it('changes nothing when the vehicle is already in that group', () => {
      store.fleet.assign('acme', 'v1', 'g1', t('01:00'), 'ann');
      const again = store.fleet.assign('acme', 'v1', 'g1', t('02:00'), 'bob');
      expect(again).toMatchObject({ group_id: 'g1', assigned_at: t('01:00'), assigned_by: 'ann' });
      expect(counts()).toEqual([1, 0]);
    });

    it('refuses a group of another tenant or none, and leaves every count as it was', () => {
      store.fleet.assign('acme', 'v1', 'g1', t('01:00'), 'ann');
      expect(String(failure(() => store.fleet.assign('acme', 'v1', 'g3', t('02:00'), 'bob')))).toMatch(/FOREIGN KEY/);
      expect(String(failure(() => store.fleet.assign('acme', 'v1', 'missing', t('02:00'), 'bob')))).toMatch(/FOREIGN KEY/);
      expect(counts()).toEqual([1, 0]); // the decrement of g1 was rolled back with the failed move
      expect(store.fleet.group('globex', 'g3')!.vehicle_count).toBe(0);
      expect(store.fleet.vehicle('acme', 'v1')).toMatchObject({ group_id: 'g1', assigned_by: 'ann' });
    });

    it("lists a group's vehicles by id, paged, within the tenant", () => {
      store.fleet.insertVehicle(vehicle('acme', 'v0', '1HGCM82633A004354'));
      for (const v of ['v2', 'v0', 'v1']) store.fleet.assign('acme', v, 'g1', t('01:00'), 'ann');
      expect(store.fleet.members('acme', 'g1', 10, 0).map((v) => v.vehicle_id)).toEqual(['v0', 'v1', 'v2']);
      expect(store.fleet.members('acme', 'g1', 1, 1).map((v) => v.vehicle_id)).toEqual(['v1']);
      expect(store.fleet.members('acme', 'g2', 10, 0)).toEqual([]);
      expect(store.fleet.members('globex', 'g1', 10, 0)).toEqual([]);
    });
  });
});
