/**
 * @module Fleet groups and vehicles (docs/http-api.md, fleet groups). Every id is resolved within
 * the caller's tenant, so another tenant's group or vehicle is a 404 exactly like a missing one.
 */
import { etagOf, unconditional, type Precondition } from '../preconditions';
import { randomBase32 } from '../../shared/ids';
import { isUniqueViolation, type Store } from '../store/index';
import type { GroupRow } from '../store/fleet';
import { ApiError } from '../errors';
import type { FleetAssignment, FleetGroup, FleetGroupPage, FleetGroupVehicles, FleetPagination, FleetVehicle } from '../../shared/api/fleet';
import { createFleetVehicles, vehicleView } from './vehicles';

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

export function createFleet(store: Store, now: () => number) {
  const fleet = store.fleet;
  const iso = () => new Date(now()).toISOString();

  async function groupOr404(tenant: string, groupId: string): Promise<GroupRow> {
    const g = await fleet.group(tenant, groupId);
    if (!g) throw new ApiError('GROUP_NOT_FOUND', `no group ${groupId} in this tenant`);
    return g;
  }

  return {
    ...createFleetVehicles(store),

    async createGroup(tenant: string, actor: string, input: NewGroup): Promise<FleetGroup> {
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
        await fleet.insertGroup(row);
      } catch (err) {
        if (isUniqueViolation(err)) throw new ApiError('GROUP_NAME_CONFLICT', `a group named "${name}" exists in this tenant`);
        throw err;
      }
      return groupView(row);
    },

    async listGroups(tenant: string, p: Page): Promise<FleetGroupPage> {
      const { items, total } = await fleet.groups(tenant, p.limit, (p.page - 1) * p.limit);
      return { groups: items.map(groupView), pagination: pagination(p, total) };
    },

    getGroup: async (tenant: string, groupId: string): Promise<FleetGroup> => groupView(await groupOr404(tenant, groupId)),

    /** The group's tag: its fields and how many vehicles it holds (none: no such group). */
    async groupTag(tenant: string, groupId: string): Promise<string | undefined> {
      const g = await fleet.group(tenant, groupId);
      return g && groupTagOf(g);
    },

    async registerVehicle(tenant: string, input: { vin: string; vehicle_id?: string | undefined; device_id?: string | undefined }): Promise<FleetVehicle> {
      if (input.device_id !== undefined && !(await store.devices.get(input.device_id))) {
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
        await fleet.insertVehicle(row);
      } catch (err) {
        if (isUniqueViolation(err)) {
          throw new ApiError('VEHICLE_CONFLICT', `a vehicle with that id or VIN exists in this tenant`);
        }
        throw err;
      }
      return vehicleView((await fleet.vehicle(tenant, row.vehicle_id))!);
    },

    /** Moves a vehicle into a group; `precondition` is checked against that group's tag. */
    async assign(tenant: string, actor: string, vehicleId: string, groupId: string, precondition: Precondition = unconditional): Promise<FleetAssignment> {
      const notFound = () => new ApiError('VEHICLE_NOT_FOUND', `no vehicle ${vehicleId} in this tenant`);
      if (!(await fleet.vehicle(tenant, vehicleId))) throw notFound();
      const g = await groupOr404(tenant, groupId);
      // Checked in the move's transaction, against the group as it is then: of two moves with the same tag, one wins.
      const v = await fleet.assign(tenant, vehicleId, groupId, iso(), actor, (locked) => precondition(groupTagOf(locked)));
      if (!v) throw notFound();
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

    async groupVehicles(tenant: string, groupId: string, p: Page): Promise<FleetGroupVehicles> {
      const g = await groupOr404(tenant, groupId);
      const vehicles = await fleet.members(tenant, groupId, p.limit, (p.page - 1) * p.limit);
      return {
        group_id: g.group_id,
        group_name: g.name,
        vehicles: vehicles.map((v) => ({ vehicle_id: v.vehicle_id, vin: v.vin, status: v.status, device_id: v.device_id })),
        pagination: pagination(p, g.vehicle_count),
      };
    },
  };
}
export type Fleet = ReturnType<typeof createFleet>;
