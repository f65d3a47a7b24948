/** The fleet repository: everything scoped to one tenant, group names and VINs unique per tenant, and assignment moving a vehicle with both group counts kept right in one transaction, also when peers move vehicles at once. */
import { beforeEach, describe, expect, it } from 'vitest';
import type { GroupRow } from '../../../../api/store/fleet';
import { isUniqueViolation, openStore } from '../../../../api/store/index';
import { failure, freshStoreLocation, onPostgres, storeForEachTest } from '../../../helpers/store';

/** True when the database refused a row for naming a parent that does not exist. */
const isForeignKeyViolation = (err: unknown) => ['SQLITE_CONSTRAINT_FOREIGNKEY', '23503'].includes((err as { code?: string }).code ?? '');

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
    it('stores a group and finds it only in its tenant', async () => {
      const row = group('acme', 'g1', { name: 'Berlin Vans', name_key: 'berlin vans', description: 'EVs', region: 'eu-central-1', tags: '["ev","van"]' });
      await store.fleet.insertGroup(row);
      expect(await store.fleet.group('acme', 'g1')).toEqual(row);
      expect(JSON.parse((await store.fleet.group('acme', 'g1'))!.tags)).toEqual(['ev', 'van']);
      expect(await store.fleet.group('globex', 'g1')).toBeUndefined();
    });

    it('refuses a second group with the same name key in a tenant, not in another tenant', async () => {
      await store.fleet.insertGroup(group('acme', 'g1', { name: 'Berlin Vans', name_key: 'berlin vans' }));
      const err = await failure(() => store.fleet.insertGroup(group('acme', 'g2', { name: ' BERLIN VANS ', name_key: 'berlin vans' })));
      expect(isUniqueViolation(err)).toBe(true);
      expect(await store.fleet.group('acme', 'g2')).toBeUndefined();
      await store.fleet.insertGroup(group('globex', 'g2', { name: 'Berlin Vans', name_key: 'berlin vans' }));
      // the same group id in another tenant is another group
      await store.fleet.insertGroup(group('globex', 'g1'));
      expect((await store.fleet.groups('globex', 10, 0)).total).toBe(2);
    });

    it("lists a tenant's groups oldest first (id breaking ties), paged, with the tenant's total", async () => {
      await store.fleet.insertGroup(group('acme', 'g-c', { created_at: t('00:02') }));
      await store.fleet.insertGroup(group('acme', 'g-b', { created_at: t('00:01') }));
      await store.fleet.insertGroup(group('acme', 'g-a', { created_at: t('00:02') }));
      await store.fleet.insertGroup(group('globex', 'g-z', { created_at: t('00:00') }));
      const ids = async (tenant: string, limit: number, offset: number) => {
        const { items, total } = await store.fleet.groups(tenant, limit, offset);
        return { ids: items.map((g) => g.group_id), total };
      };
      expect(await ids('acme', 10, 0)).toEqual({ ids: ['g-b', 'g-a', 'g-c'], total: 3 });
      expect(await ids('acme', 2, 1)).toEqual({ ids: ['g-a', 'g-c'], total: 3 });
      expect(await ids('globex', 10, 0)).toEqual({ ids: ['g-z'], total: 1 });
      expect(await ids('initech', 10, 0)).toEqual({ ids: [], total: 0 });
    });
  });

  describe('vehicles', () => {
    const VIN = '1HGCM82633A004352';

    it('registers an active, unassigned vehicle found only in its tenant', async () => {
      await store.fleet.insertVehicle({ ...vehicle('acme', 'v1', VIN), device_id: 'dev-7' });
      expect(await store.fleet.vehicle('acme', 'v1')).toEqual({
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
      expect(await store.fleet.vehicle('globex', 'v1')).toBeUndefined();
    });

    it('refuses a VIN or a vehicle id used twice in a tenant, and allows both in another tenant', async () => {
      await store.fleet.insertVehicle(vehicle('acme', 'v1', VIN));
      expect(isUniqueViolation(await failure(() => store.fleet.insertVehicle(vehicle('acme', 'v2', VIN))))).toBe(true);
      expect(isUniqueViolation(await failure(() => store.fleet.insertVehicle(vehicle('acme', 'v1', '2HGCM82633A004352'))))).toBe(true);
      await store.fleet.insertVehicle(vehicle('globex', 'v1', VIN));
      expect((await store.fleet.vehicle('globex', 'v1'))?.vin).toBe(VIN);
      expect(await store.fleet.vehicle('acme', 'v2')).toBeUndefined();
    });
  });

  describe('assign', () => {
    beforeEach(async () => {
      await store.fleet.insertGroup(group('acme', 'g1'));
      await store.fleet.insertGroup(group('acme', 'g2'));
      await store.fleet.insertGroup(group('globex', 'g3'));
      await store.fleet.insertVehicle(vehicle('acme', 'v1', '1HGCM82633A004352'));
      await store.fleet.insertVehicle(vehicle('acme', 'v2', '1HGCM82633A004353'));
    });
    const counts = async () => [(await store.fleet.group('acme', 'g1'))!.vehicle_count, (await store.fleet.group('acme', 'g2'))!.vehicle_count];

    it('puts a vehicle in a group, moves it, and both counts follow', async () => {
      const assigned = await store.fleet.assign('acme', 'v1', 'g1', t('01:00'), 'ann');
      expect(assigned).toMatchObject({ vehicle_id: 'v1', group_id: 'g1', assigned_at: t('01:00'), assigned_by: 'ann' });
      await store.fleet.assign('acme', 'v2', 'g1', t('01:01'), 'ann');
      expect(await counts()).toEqual([2, 0]);
      expect(await store.fleet.assign('acme', 'v1', 'g2', t('02:00'), 'bob')).toMatchObject({ group_id: 'g2', assigned_at: t('02:00'), assigned_by: 'bob' });
      expect(await counts()).toEqual([1, 1]);
    });

    it('changes nothing when the vehicle is already in that group', async () => {
      await store.fleet.assign('acme', 'v1', 'g1', t('01:00'), 'ann');
      const again = await store.fleet.assign('acme', 'v1', 'g1', t('02:00'), 'bob');
      expect(again).toMatchObject({ group_id: 'g1', assigned_at: t('01:00'), assigned_by: 'ann' });
      expect(await counts()).toEqual([1, 0]);
    });

    it('refuses a group of another tenant or none, and leaves every count as it was', async () => {
      await store.fleet.assign('acme', 'v1', 'g1', t('01:00'), 'ann');
      expect(isForeignKeyViolation(await failure(() => store.fleet.assign('acme', 'v1', 'g3', t('02:00'), 'bob')))).toBe(true);
      expect(isForeignKeyViolation(await failure(() => store.fleet.assign('acme', 'v1', 'missing', t('02:00'), 'bob')))).toBe(true);
      expect(await counts()).toEqual([1, 0]); // the failed move changed no count
      expect((await store.fleet.group('globex', 'g3'))!.vehicle_count).toBe(0);
      expect(await store.fleet.vehicle('acme', 'v1')).toMatchObject({ group_id: 'g1', assigned_by: 'ann' });
    });

    it('keeps every count right when peers move the same vehicles at once', async () => {
      // Two peers on one database (on SQLite, one server: its store is the only writer).
      const location = await freshStoreLocation();
      const first = await openStore(location);
      const second = onPostgres ? await openStore(location) : first;
      try {
        const ids = { groups: ['g0', 'g1', 'g2'], vehicles: Array.from({ length: 8 }, (_, i) => `v${i}`) };
        for (const g of ids.groups) await first.fleet.insertGroup(group('acme', g));
        for (const [i, v] of ids.vehicles.entries()) await first.fleet.insertVehicle(vehicle('acme', v, `1HGCM82633A00${4360 + i}`));
        const moves = [];
        for (let round = 0; round < 6; round++) {
          for (const [i, v] of ids.vehicles.entries()) {
            moves.push((round % 2 === 0 ? first : second).fleet.assign('acme', v, ids.groups[(i + round) % 3]!, t('01:00'), 'ann'));
          }
        }
        const moved = await Promise.all(moves);
        expect(moved.every((v) => v !== undefined && ids.groups.includes(v.group_id!))).toBe(true);
        let total = 0;
        for (const g of ids.groups) {
          const members = await first.fleet.members('acme', g, 100, 0);
          expect((await first.fleet.group('acme', g))!.vehicle_count).toBe(members.length);
          total += members.length;
        }
        expect(total).toBe(ids.vehicles.length);
      } finally {
        if (second !== first) await second.close();
        await first.close();
      }
    });

    it('lets the check see the group locked for the move, and undoes the move when it throws', async () => {
      await store.fleet.assign('acme', 'v1', 'g1', t('01:00'), 'ann');
      const seen: number[] = [];
      const refused = await failure(() =>
        store.fleet.assign('acme', 'v1', 'g2', t('02:00'), 'bob', (g) => {
          seen.push(g.vehicle_count);
          throw new Error('stale');
        }),
      );
      expect(refused).toMatchObject({ message: 'stale' });
      expect(seen).toEqual([0]);
      expect(await counts()).toEqual([1, 0]);
      expect(await store.fleet.vehicle('acme', 'v1')).toMatchObject({ group_id: 'g1', assigned_by: 'ann' });
      expect(await store.fleet.assign('acme', 'nobody', 'g1', t('02:00'), 'bob')).toBeUndefined();
    });

    it("lists a group's vehicles by id, paged, within the tenant", async () => {
      await store.fleet.insertVehicle(vehicle('acme', 'v0', '1HGCM82633A004354'));
      for (const v of ['v2', 'v0', 'v1']) await store.fleet.assign('acme', v, 'g1', t('01:00'), 'ann');
      expect((await store.fleet.members('acme', 'g1', 10, 0)).map((v) => v.vehicle_id)).toEqual(['v0', 'v1', 'v2']);
      expect((await store.fleet.members('acme', 'g1', 1, 1)).map((v) => v.vehicle_id)).toEqual(['v1']);
      expect(await store.fleet.members('acme', 'g2', 10, 0)).toEqual([]);
      expect(await store.fleet.members('globex', 'g1', 10, 0)).toEqual([]);
    });
  });
});
