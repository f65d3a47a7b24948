/** @module Fleet groups and vehicles; every statement is scoped to one tenant. */
import type { Db } from './db';

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

export function createFleetRepo(db: Db) {
  const insertGroup = db.prepare(
    `INSERT INTO fleet_groups (tenant_id, group_id, name, name_key, description, region, tags, created_at, created_by)
     VALUES (@tenant_id, @group_id, @name, @name_key, @description, @region, @tags, @created_at, @created_by)`,
  );
  const group = db.prepare<[string, string], GroupRow>('SELECT * FROM fleet_groups WHERE tenant_id = ? AND group_id = ?');
  const groups = db.prepare<[string, number, number], GroupRow>(
    'SELECT * FROM fleet_groups WHERE tenant_id = ? ORDER BY created_at, group_id LIMIT ? OFFSET ?',
  );
  const groupCount = db.prepare<[string], { n: number }>('SELECT COUNT(*) AS n FROM fleet_groups WHERE tenant_id = ?');
  const adjustCount = db.prepare<[number, string, string]>('UPDATE fleet_groups SET vehicle_count = vehicle_count + ? WHERE tenant_id = ? AND group_id = ?');
  const insertVehicle = db.prepare(
    `INSERT INTO fleet_vehicles (tenant_id, vehicle_id, vin, status, device_id, created_at)
     VALUES (@tenant_id, @vehicle_id, @vin, 'active', @device_id, @created_at)`,
  );
  const vehicle = db.prepare<[string, string], VehicleRow>('SELECT * FROM fleet_vehicles WHERE tenant_id = ? AND vehicle_id = ?');
  const assign = db.prepare<[string, string, string, string, string]>(
    'UPDATE fleet_vehicles SET group_id = ?, assigned_at = ?, assigned_by = ? WHERE tenant_id = ? AND vehicle_id = ?',
  );
  const members = db.prepare<[string, string, number, number], VehicleRow>(
    'SELECT * FROM fleet_vehicles WHERE tenant_id = ? AND group_id = ? ORDER BY vehicle_id LIMIT ? OFFSET ?',
  );

  return {
    /** Throws SQLITE_CONSTRAINT_UNIQUE when the tenant has a group of that name. */
    insertGroup(row: GroupRow): void {
      insertGroup.run(row);
    },
    group: (tenant: string, groupId: string): GroupRow | undefined => group.get(tenant, groupId),
    groups(tenant: string, limit: number, offset: number) {
      return { items: groups.all(tenant, limit, offset), total: groupCount.get(tenant)!.n };
    },
    /** Throws SQLITE_CONSTRAINT_* when the vehicle id or VIN exists in the tenant. */
    insertVehicle(row: Pick<VehicleRow, 'tenant_id' | 'vehicle_id' | 'vin' | 'device_id' | 'created_at'>): void {
      insertVehicle.run(row);
    },
    vehicle: (tenant: string, vehicleId: string): VehicleRow | undefined => vehicle.get(tenant, vehicleId),
    /** Moves a vehicle into a group and keeps both groups' counts right, in one transaction. */
    assign: db.transaction((tenant: string, vehicleId: string, groupId: string, at: string, by: string): VehicleRow => {
      const v = vehicle.get(tenant, vehicleId)!;
      if (v.group_id === groupId) return v;
      if (v.group_id) adjustCount.run(-1, tenant, v.group_id);
      adjustCount.run(1, tenant, groupId);
      assign.run(groupId, at, by, tenant, vehicleId);
      return vehicle.get(tenant, vehicleId)!;
    }),
    members(tenant: string, groupId: string, limit: number, offset: number): VehicleRow[] {
      return members.all(tenant, groupId, limit, offset);
    },
  };
}
export type FleetRepo = ReturnType<typeof createFleetRepo>;
