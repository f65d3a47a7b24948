/**
 * @module Fleet groups and vehicles (docs/http-api.md, fleet groups). Every id is resolved within
 * the caller's tenant, so another tenant's group or vehicle is a 404 exactly like a missing one.
 */
import { etagOf, unconditional, type Precondition } from '../preconditions';
import { randomBase32 } from '../../shared/ids';
import { isUniqueViolation, type Store } from '../store/index';
import type { GroupRow, VehicleRow } from '../store/fleet';
import { ApiError } from '../errors';
import type { FleetAssignment, FleetGroup, FleetGroupPage, FleetGroupVehicles, FleetPagination, FleetVehicle } from '../../shared/api/fleet';

export interface NewGroup {
  name: string;
  description?: string | undefined;
  region?: string | undefined;
  tags?: string[] | undefined;
}

export interface Page {
  page: number;
  limit: number;
}

/** How names are compared: trimmed, NFC-normalised and lower-cased. */
export const nameKey = (name: string) => name.trim().normalize('NFC').toLowerCase();

export function pagination(p: Page, total: number): FleetPagination {
  return { page: p.page, limit: p.limit, total_records: total, total_pages: Math.ceil(total / p.limit) };
}

const groupView = (g: GroupRow): FleetGroup => ({
  group_id: g.group_id,
  name: g.name,
  description: g.description,
  region: g.region,
  tags: JSON.parse(g.tags) as string[],
  vehicle_count: g.vehicle_count,
  created_at: g.created_at,
  created_by: g.created_by,
});

const groupTagOf = (g: GroupRow) => etagOf(['group', groupView(g)]);

const vehicleView = (v: VehicleRow): FleetVehicle => ({
  vehicle_id: v.vehicle_id,
  vin: v.vin,
  status: v.status,
  device_id: v.device_id,
  group_id: v.group_id,
  created_at: v.created_at,
});

export function createFleet(store: Store, now: () => number) {
  const fleet = store.fleet;
  const iso = () => new Date(now()).toISOString();

  function groupOr404(tenant: string, groupId: string): GroupRow {
    const g = fleet.group(tenant, groupId);
    if (!g) throw new ApiError('GROUP_NOT_FOUND', `no group ${groupId} in this tenant`);
    return g;
  }

  return {
    createGroup(tenant: string, actor: string, input: NewGroup) {
      const name = input.name.trim().normalize('NFC');
      const row: GroupRow = {
        tenant_id: tenant,
        group_id: `grp_${randomBase32(20)}`,
        name,
        name_key: nameKey(name),
        description: input.description ?? null,
        region: input.region ?? null,
        tags: JSON.stringify([...new Set(input.tags ?? [])]),
        vehicle_count: 0,
        created_at: iso(),
        created_by: actor,
      };
      try {
        fleet.insertGroup(row);
      } catch (err) {
        if (isUniqueViolation(err)) throw new ApiError('GROUP_NAME_CONFLICT', `a group named "${name}" exists in this tenant`);
        throw err;
      }
      return groupView(row);
    },

    listGroups(tenant: string, p: Page): FleetGroupPage {
      const { items, total } = fleet.groups(tenant, p.limit, (p.page - 1) * p.limit);
      return { groups: items.map(groupView), pagination: pagination(p, total) };
    },

    getGroup: (tenant: string, groupId: string) => groupView(groupOr404(tenant, groupId)),

    /** The group's tag: its fields and how many vehicles it holds (none: no such group). */
    groupTag(tenant: string, groupId: string): string | undefined {
      const g = fleet.group(tenant, groupId);
      return g && groupTagOf(g);
    },

    registerVehicle(tenant: string, input: { vin: string; vehicle_id?: string | undefined; device_id?: string | undefined }): FleetVehicle {
      if (input.device_id !== undefined && !store.devices.get(input.device_id)) {
        throw new ApiError('VALIDATION_ERROR', `no device ${input.device_id} is registered`, [{ path: 'device_id', message: 'must name a registered device' }]);
      }
      const row = {
        tenant_id: tenant,
        vehicle_id: input.vehicle_id ?? `veh_${randomBase32(20)}`,
        vin: input.vin,
        device_id: input.device_id ?? null,
        created_at: iso(),
      };
      try {
        fleet.insertVehicle(row);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new ApiError('VEHICLE_CONFLICT', `a vehicle with that id or VIN exists in this tenant`);
        }
        throw err;
      }
      return vehicleView(fleet.vehicle(tenant, row.vehicle_id)!);
    },

    /** Moves a vehicle into a group; `precondition` is checked against that group's tag. */
    assign(tenant: string, actor: string, vehicleId: string, groupId: string, precondition: Precondition = unconditional): FleetAssignment {
      if (!fleet.vehicle(tenant, vehicleId)) throw new ApiError('VEHICLE_NOT_FOUND', `no vehicle ${vehicleId} in this tenant`);
      const g = groupOr404(tenant, groupId);
      precondition(groupTagOf(g));
      const v = fleet.assign(tenant, vehicleId, groupId, iso(), actor);
      return {
        vehicle_id: v.vehicle_id,
        vin: v.vin,
        group_id: g.group_id,
        group_name: g.name,
        // A vehicle in a group was assigned to it: the store sets both with its group.
        assigned_at: v.assigned_at!,
        assigned_by: v.assigned_by!,
      };
    },

    groupVehicles(tenant: string, groupId: string, p: Page): FleetGroupVehicles {
      const g = groupOr404(tenant, groupId);
      const vehicles = fleet.members(tenant, groupId, p.limit, (p.page - 1) * p.limit);
      return {
        group_id: g.group_id,
        group_name: g.name,
        vehicles: vehicles.map((v) => ({ vehicle_id: v.vehicle_id, vin: v.vin, status: v.status })),
        pagination: pagination(p, g.vehicle_count),
      };
    },
  };
}
export type Fleet = ReturnType<typeof createFleet>;
