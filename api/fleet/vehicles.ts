/**
 * @module A tenant's vehicles one by one (docs/http-api.md, fleet groups): read with their tag,
 * listed (all, in no group, by VIN), taken out of their group, deleted. Ids resolve within the
 * tenant, so another tenant's vehicle is a 404 exactly like a missing one; a write's `If-Match`
 * is checked against the vehicle's tag inside the write's transaction.
 */
import { etagOf, unconditional, type Precondition } from '../preconditions';
import { ApiError } from '../errors';
import type { Store } from '../store/index';
import type { VehicleRow } from '../store/fleet';
import { createFleetVehicleRepo } from '../store/fleet-vehicles';
import type { FleetPagination, FleetVehicle, FleetVehicleDeleted, FleetVehiclePage, VehicleQuery } from '../../shared/api/fleet';

export const vehicleView = (v: VehicleRow): FleetVehicle => ({
  vehicle_id: v.vehicle_id,
  vin: v.vin,
  status: v.status,
  device_id: v.device_id,
  group_id: v.group_id,
  created_at: v.created_at,
});

/** A vehicle's tag: every field of its record, its group among them. */
export const vehicleTag = (view: FleetVehicle) => etagOf(['vehicle', view]);
const vehicleTagOf = (v: VehicleRow) => vehicleTag(vehicleView(v));

const pagination = (page: number, limit: number, total: number): FleetPagination => ({
  page,
  limit,
  total_records: total,
  total_pages: Math.ceil(total / limit),
});

export function createFleetVehicles(store: Store) {
  const repo = createFleetVehicleRepo(store.db);
  const notFound = (vehicleId: string) => new ApiError('VEHICLE_NOT_FOUND', `no vehicle ${vehicleId} in this tenant`);

  async function vehicleOr404(tenant: string, vehicleId: string): Promise<VehicleRow> {
    const v = await store.fleet.vehicle(tenant, vehicleId);
    if (!v) throw notFound(vehicleId);
    return v;
  }

  return {
    /** The vehicle and its tag. */
    async getVehicle(tenant: string, vehicleId: string): Promise<{ vehicle: FleetVehicle; etag: string }> {
      const v = await vehicleOr404(tenant, vehicleId);
      return { vehicle: vehicleView(v), etag: vehicleTagOf(v) };
    },

    async listVehicles(tenant: string, q: VehicleQuery): Promise<FleetVehiclePage> {
      const { items, total } = await repo.list(tenant, { unassigned: q.unassigned, vin: q.vin }, q.limit, (q.page - 1) * q.limit);
      return { vehicles: items.map(vehicleView), pagination: pagination(q.page, q.limit, total) };
    },

    /** Takes the vehicle out of its group (none: nothing changes); resolves to it and its new tag. */
    async unassign(tenant: string, vehicleId: string, precondition: Precondition = unconditional): Promise<{ vehicle: FleetVehicle; etag: string }> {
      const v = await repo.unassign(tenant, vehicleId, (locked) => precondition(vehicleTagOf(locked)));
      if (!v) throw notFound(vehicleId);
      return { vehicle: vehicleView(v), etag: vehicleTagOf(v) };
    },

    /** Deletes the vehicle; its VIN and id are free again, and its group counts one fewer. */
    async removeVehicle(tenant: string, vehicleId: string, precondition: Precondition = unconditional): Promise<FleetVehicleDeleted> {
      const v = await repo.remove(tenant, vehicleId, (locked) => precondition(vehicleTagOf(locked)));
      if (!v) throw notFound(vehicleId);
      return { vehicle_id: v.vehicle_id, vin: v.vin, group_id: v.group_id, deleted: true };
    },
  };
}
