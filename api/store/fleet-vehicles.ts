/**
 * @module The fleet's vehicles beyond their groups' moves (`./fleet.ts`): listing a tenant's
 * vehicles (all, those in no group, the one with a VIN), taking one out of its group, deleting
 * one. A write locks the vehicle, then its group, in the order `./fleet.ts` moves take, so the
 * group's `vehicle_count` stays right when peers write at once.
 */
import { atomically, type Executor } from './schema';
import { adjustCount, lockVehicle, type VehicleRow } from './fleet';

export interface VehicleFilter {
  /** Only vehicles in no group. */
  unassigned?: boolean | undefined;
  /** Only the vehicle with this VIN (unique in a tenant). */
  vin?: string | undefined;
}

export function createFleetVehicleRepo(db: Executor) {
  return {
    /** A page of the tenant's vehicles in id order, and how many match. */
    async list(tenant: string, filter: VehicleFilter, limit: number, offset: number): Promise<{ items: VehicleRow[]; total: number }> {
      let q = db.selectFrom('fleet_vehicles').where('tenant_id', '=', tenant);
      if (filter.unassigned) q = q.where('group_id', 'is', null);
      if (filter.vin !== undefined) q = q.where('vin', '=', filter.vin);
      const [items, count] = await Promise.all([
        q.selectAll().orderBy('vehicle_id').limit(limit).offset(offset).execute(),
        q.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
      ]);
      return { items, total: Number(count.n) };
    },

    /**
     * Takes a vehicle out of its group (the group counts one fewer), in one transaction; a vehicle
     * in no group stays as it is. `check` sees the vehicle as it is then, locked (a precondition:
     * what it throws changes nothing). Undefined when there is no such vehicle.
     */
    unassign: (tenant: string, vehicleId: string, check: (v: VehicleRow) => void): Promise<VehicleRow | undefined> =>
      atomically(db, async (tx) => {
        const v = await lockVehicle(tx, tenant, vehicleId);
        if (!v) return undefined;
        check(v);
        if (v.group_id === null) return v;
        await adjustCount(tx, tenant, v.group_id, -1);
        return tx
          .updateTable('fleet_vehicles')
          .set({ group_id: null, assigned_at: null, assigned_by: null })
          .where('tenant_id', '=', tenant)
          .where('vehicle_id', '=', vehicleId)
          .returningAll()
          .executeTakeFirstOrThrow();
      }),

    /**
     * Deletes a vehicle (its group counts one fewer), in one transaction; `check` as in `unassign`.
     * Resolves to the vehicle as it was, or undefined when there is no such vehicle.
     */
    remove: (tenant: string, vehicleId: string, check: (v: VehicleRow) => void): Promise<VehicleRow | undefined> =>
      atomically(db, async (tx) => {
        const v = await lockVehicle(tx, tenant, vehicleId);
        if (!v) return undefined;
        check(v);
        if (v.group_id !== null) await adjustCount(tx, tenant, v.group_id, -1);
        await tx.deleteFrom('fleet_vehicles').where('tenant_id', '=', tenant).where('vehicle_id', '=', vehicleId).execute();
        return v;
      }),
  };
}
export type FleetVehicleRepo = ReturnType<typeof createFleetVehicleRepo>;
