/**
 * @module Fleet groups and vehicles; every statement is scoped to one tenant. A group's
 * `vehicle_count` is kept by the database, in the transaction that moves a vehicle, so it stays
 * right when peers move vehicles at once.
 */
import { atomically, type Executor } from './schema';

export interface GroupRow {
  tenant_id: string;
  group_id: string;
  name: string;
  name_key: string;
  description: string | null;
  region: string | null;
  tags: string;
  vehicle_count: number;
  created_at: string;
  created_by: string;
}

export interface VehicleRow {
  tenant_id: string;
  vehicle_id: string;
  vin: string;
  status: string;
  device_id: string | null;
  group_id: string | null;
  assigned_at: string | null;
  assigned_by: string | null;
  created_at: string;
}

/**
 * Locks the vehicle until the transaction ends (nobody else moves it meanwhile) and returns it
 * as it is now: an update that changes nothing, which locks the row on PostgreSQL (on SQLite,
 * the transaction holds the whole database already). Every write to a vehicle takes this lock
 * first, then its groups' (`./fleet-vehicles.ts` too), so writes cannot deadlock.
 */
export const lockVehicle = (tx: Executor, tenant: string, vehicleId: string): Promise<VehicleRow | undefined> =>
  tx
    .updateTable('fleet_vehicles')
    .set((eb) => ({ status: eb.ref('status') }))
    .where('tenant_id', '=', tenant)
    .where('vehicle_id', '=', vehicleId)
    .returningAll()
    .executeTakeFirst();

/** Adds `delta` to a group's count; the update also locks the group's row until the transaction ends. */
export const adjustCount = async (tx: Executor, tenant: string, groupId: string, delta: number): Promise<void> => {
  await tx
    .updateTable('fleet_groups')
    .set((eb) => ({ vehicle_count: eb('vehicle_count', '+', delta) }))
    .where('tenant_id', '=', tenant)
    .where('group_id', '=', groupId)
    .execute();
};

export function createFleetRepo(db: Executor) {
  /**
   * Locks the groups until the transaction ends and returns them as they are now (a group that
   * does not exist is not returned), like `lockVehicle`. A move locks its vehicle, then its groups
   * by id: in one order, so that moves in opposite directions cannot deadlock.
   */
  async function lockGroups(tx: Executor, tenant: string, groupIds: readonly string[]): Promise<Map<string, GroupRow>> {
    const locked = new Map<string, GroupRow>();
    for (const groupId of [...new Set(groupIds)].sort()) {
      const row = await tx
        .updateTable('fleet_groups')
        .set((eb) => ({ vehicle_count: eb.ref('vehicle_count') }))
        .where('tenant_id', '=', tenant)
        .where('group_id', '=', groupId)
        .returningAll()
        .executeTakeFirst();
      if (row) locked.set(groupId, row);
    }
    return locked;
  }

  /** Moves the vehicle from group `from` (null: none) into `to` and counts it there, if it is still in `from`. */
  async function move(tx: Executor, tenant: string, vehicleId: string, from: string | null, to: string, at: string, by: string) {
    const moved = await tx
      .updateTable('fleet_vehicles')
      .set({ group_id: to, assigned_at: at, assigned_by: by })
      .where('tenant_id', '=', tenant)
      .where('vehicle_id', '=', vehicleId)
      .where('group_id', from === null ? 'is' : '=', from)
      .returningAll()
      .executeTakeFirst();
    if (!moved) return undefined;
    if (from !== null) await adjustCount(tx, tenant, from, -1);
    await adjustCount(tx, tenant, to, 1);
    return moved;
  }

  return {
    /** Throws a unique violation (`isUniqueViolation`) when the tenant has a group of that name. */
    async insertGroup(row: GroupRow): Promise<void> {
      await db.insertInto('fleet_groups').values(row).execute();
    },
    group: (tenant: string, groupId: string): Promise<GroupRow | undefined> =>
      db.selectFrom('fleet_groups').selectAll().where('tenant_id', '=', tenant).where('group_id', '=', groupId).executeTakeFirst(),
    async groups(tenant: string, limit: number, offset: number): Promise<{ items: GroupRow[]; total: number }> {
      const ofTenant = () => db.selectFrom('fleet_groups').where('tenant_id', '=', tenant);
      const [items, count] = await Promise.all([
        ofTenant().selectAll().orderBy('created_at').orderBy('group_id').limit(limit).offset(offset).execute(),
        ofTenant()
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow(),
      ]);
      return { items, total: Number(count.n) };
    },
    /** Throws a unique violation (`isUniqueViolation`) when the vehicle id or VIN exists in the tenant. */
    async insertVehicle(row: Pick<VehicleRow, 'tenant_id' | 'vehicle_id' | 'vin' | 'device_id' | 'created_at'>): Promise<void> {
      await db
        .insertInto('fleet_vehicles')
        .values({ ...row, status: 'active' })
        .execute();
    },
    vehicle: (tenant: string, vehicleId: string): Promise<VehicleRow | undefined> =>
      db.selectFrom('fleet_vehicles').selectAll().where('tenant_id', '=', tenant).where('vehicle_id', '=', vehicleId).executeTakeFirst(),
    /**
     * Moves a vehicle into a group and keeps both groups' counts right, in one transaction;
     * undefined when there is no such vehicle. A vehicle already in the group stays as it was.
     * `check` sees the group as the move finds it, locked until the move commits (a precondition:
     * what it throws undoes the move). Throws a foreign-key violation when the tenant has no such group.
     */
    assign: (
      tenant: string,
      vehicleId: string,
      groupId: string,
      at: string,
      by: string,
      check: (group: GroupRow) => void = () => {},
    ): Promise<VehicleRow | undefined> =>
      atomically(db, async (tx) => {
        const v = await lockVehicle(tx, tenant, vehicleId);
        if (!v) return undefined;
        const target = (await lockGroups(tx, tenant, v.group_id === null ? [groupId] : [v.group_id, groupId])).get(groupId);
        if (target) check(target);
        if (v.group_id === groupId) return v;
        const moved = await move(tx, tenant, vehicleId, v.group_id, groupId, at, by);
        if (!moved) throw new Error(`vehicle ${vehicleId} left group ${v.group_id} while it was locked`);
        return moved;
      }),
    members: (tenant: string, groupId: string, limit: number, offset: number): Promise<VehicleRow[]> =>
      db
        .selectFrom('fleet_vehicles')
        .selectAll()
        .where('tenant_id', '=', tenant)
        .where('group_id', '=', groupId)
        .orderBy('vehicle_id')
        .limit(limit)
        .offset(offset)
        .execute(),
  };
}
export type FleetRepo = ReturnType<typeof createFleetRepo>;
