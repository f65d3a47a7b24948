/**
 * @module `tether fleet vehicles register | assign | unassign | rm | list`: a tenant's vehicles
 * (docs/http-api.md, fleet groups). A vehicle is named by its id (`veh_…`) or its VIN
 * (`./fleet-client.ts` says why the two cannot be confused).
 */
import type { FleetAssignment, FleetGroupVehicles, FleetVehicle, FleetVehicleDeleted } from '../../shared/api/fleet';
import { confirm } from '../confirm';
import type { Context } from '../context';
import { usageError } from '../errors';
import { printJson, table } from '../output';
import { allPages, fleetApi, groupIdOf, tenantOf, vehicleIdOf, vehicleOf, type FleetApi, type TenantFlag } from './fleet-client';

const vehicleUrl = (vehicleId: string) => `/v1/fleet/vehicles/${encodeURIComponent(vehicleId)}`;

/** Puts a vehicle in a group (moving it out of the one it was in). */
const assign = (call: FleetApi, vehicleId: string, groupId: string) => call<FleetAssignment>('PUT', `${vehicleUrl(vehicleId)}/group`, { group_id: groupId });

export interface RegisterFlags extends TenantFlag {
  id?: string;
  device?: string;
  group?: string;
  json?: boolean;
}

export async function vehicleRegister(ctx: Context, vin: string, flags: RegisterFlags): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  // The group is found first, so that a wrong one registers nothing.
  const groupId = flags.group === undefined ? undefined : await groupIdOf(call, tenant, flags.group);
  const v = await call<FleetVehicle>('POST', '/v1/fleet/vehicles', { vin, vehicle_id: flags.id, device_id: flags.device });
  const assigned = groupId === undefined ? undefined : await assign(call, v.vehicle_id, groupId);
  if (flags.json) return printJson(ctx.out, assigned ? { ...v, group_id: assigned.group_id } : v);
  ctx.out.stdout(
    `registered vehicle ${v.vehicle_id} (VIN ${v.vin}) in tenant ${tenant}` +
      `${v.device_id ? `, with device ${v.device_id}` : ''}${assigned ? `, in group ${assigned.group_id} "${assigned.group_name}"` : ''}\n`,
  );
}

export async function vehicleAssign(ctx: Context, ref: string, flags: TenantFlag & { group: string; json?: boolean }): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  const groupId = await groupIdOf(call, tenant, flags.group);
  const a = await assign(call, await vehicleIdOf(call, tenant, ref), groupId);
  if (flags.json) return printJson(ctx.out, a);
  ctx.out.stdout(`assigned vehicle ${a.vehicle_id} (VIN ${a.vin}) to group ${a.group_id} "${a.group_name}"\n`);
}

export async function vehicleUnassign(ctx: Context, ref: string, flags: TenantFlag & { json?: boolean }): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  const before = await vehicleOf(call, tenant, ref);
  const v = await call<FleetVehicle>('DELETE', `${vehicleUrl(before.vehicle_id)}/group`);
  if (flags.json) return printJson(ctx.out, v);
  ctx.out.stdout(
    before.group_id === null
      ? `vehicle ${v.vehicle_id} (VIN ${v.vin}) is in no group\n`
      : `took vehicle ${v.vehicle_id} (VIN ${v.vin}) out of group ${before.group_id}\n`,
  );
}

export async function vehicleRemove(ctx: Context, ref: string, flags: TenantFlag & { yes?: boolean; json?: boolean }): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  // Asked about a vehicle that exists: a typo fails before the question.
  const v = await vehicleOf(call, tenant, ref);
  const group = v.group_id === null ? '' : `, leaves group ${v.group_id}`;
  await confirm(
    `delete vehicle ${v.vehicle_id} (VIN ${v.vin})`,
    `It is gone from tenant ${tenant}${group}, and its id and VIN may be registered again`,
    flags.yes,
  );
  const gone = await call<FleetVehicleDeleted>('DELETE', vehicleUrl(v.vehicle_id));
  if (flags.json) return printJson(ctx.out, gone);
  ctx.out.stdout(`deleted vehicle ${gone.vehicle_id} (VIN ${gone.vin})${gone.group_id === null ? '' : `; it was in group ${gone.group_id}`}\n`);
}

export interface ListFlags extends TenantFlag {
  group?: string;
  unassigned?: boolean;
  json?: boolean;
}

/** `fleet vehicles list`: every vehicle of the tenant, those of one group (`--group`), or those in none (`--unassigned`). */
export async function vehicleList(ctx: Context, flags: ListFlags): Promise<void> {
  if (flags.group !== undefined && flags.unassigned) throw usageError('--group and --unassigned cannot go together: a vehicle in a group is not unassigned');
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  if (flags.group !== undefined) {
    const id = await groupIdOf(call, tenant, flags.group);
    const vehicles = await allPages<FleetGroupVehicles['vehicles'][number]>(call, `/v1/fleet/groups/${encodeURIComponent(id)}/vehicles`, 'vehicles');
    if (flags.json) return printJson(ctx.out, vehicles);
    if (vehicles.length === 0) return ctx.out.stdout(`no vehicles in group ${id}\n`);
    const rows = vehicles.map((v) => ({ vehicle: v.vehicle_id, vin: v.vin, status: v.status, device: v.device_id }));
    return ctx.out.stdout(table(rows, ['vehicle', 'vin', 'status', 'device']));
  }
  const vehicles = await allPages<FleetVehicle>(call, '/v1/fleet/vehicles', 'vehicles', flags.unassigned ? '&unassigned=true' : '');
  if (flags.json) return printJson(ctx.out, vehicles);
  if (vehicles.length === 0)
    return ctx.out.stdout(flags.unassigned ? `no vehicles without a group in tenant ${tenant}\n` : `no vehicles in tenant ${tenant}\n`);
  const rows = vehicles.map((v) => ({ vehicle: v.vehicle_id, vin: v.vin, status: v.status, device: v.device_id, group: v.group_id }));
  ctx.out.stdout(table(rows, ['vehicle', 'vin', 'status', 'device', 'group']));
}
