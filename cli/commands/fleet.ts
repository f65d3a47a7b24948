/**
 * @module `tether fleet groups list | create | show` and `tether fleet vehicles register | assign |
 * list`: the fleet interface (docs/http-api.md, fleet groups), in the tenant named by `--tenant`
 * or, without it, the one tenant the token is granted.
 */
import type { FleetAssignment, FleetGroup, FleetGroupVehicles, FleetPagination, FleetVehicle } from '../../shared/api/fleet';
import type { Me } from '../../shared/api/identity';
import type { RequestOptions } from '../api-client';
import type { Context } from '../context';
import { describe } from '../describe';
import { CliError, usageError } from '../errors';
import { printJson, table } from '../output';

/** The fleet interface's largest page. */
const LIMIT = 100;
const shortTime = (iso: string) => iso.replace(/\.\d+Z$/, 'Z');

export interface TenantFlag {
  tenant?: string;
}

/** The tenant to act in: `--tenant`, else the token's only one; a usage error when that is not one tenant. */
async function tenantOf(ctx: Context, flags: TenantFlag): Promise<string> {
  if (flags.tenant) return flags.tenant;
  const { tenants } = await ctx.api().request<Me>('GET', '/v1/me');
  if (tenants.length === 1 && tenants[0] !== '*') return tenants[0]!;
  if (tenants.includes('*')) throw usageError('this token is granted every tenant; name one with --tenant');
  if (tenants.length === 0) {
    throw usageError('this token is granted no tenant; ask an administrator for a fleet token (tokens get tenants when issued), or name one with --tenant');
  }
  throw usageError(`this token is granted tenants ${tenants.join(', ')}; name one with --tenant`);
}

/** A client of the fleet interface in one tenant. */
function fleetApi(ctx: Context, tenant: string) {
  const options: RequestOptions = { headers: { 'x-tenant-id': tenant } };
  return <T>(method: string, path: string, body?: unknown) => ctx.api().request<T>(method, path, body, options);
}
type FleetApi = ReturnType<typeof fleetApi>;

/** Every page of a fleet list: `key` names the items in each page's `data`. */
async function allPages<T>(call: FleetApi, path: string, key: string): Promise<T[]> {
  const items: T[] = [];
  for (let page = 1; ; page++) {
    const data = await call<Record<string, unknown> & { pagination: FleetPagination }>('GET', `${path}?page=${page}&limit=${LIMIT}`);
    items.push(...(data[key] as T[]));
    if (page >= data.pagination.total_pages) return items;
  }
}

/** The id of the group `ref` names: an id (`grp_…`) as it is, else a group name, matched as the server matches names. */
async function groupIdOf(call: FleetApi, tenant: string, ref: string): Promise<string> {
  if (ref.startsWith('grp_')) return ref;
  const key = (name: string) => name.trim().normalize('NFC').toLowerCase();
  const found = (await allPages<FleetGroup>(call, '/v1/fleet/groups', 'groups')).find((g) => key(g.name) === key(ref));
  if (!found) throw new CliError(`no group named "${ref}" in tenant ${tenant} (GROUP_NOT_FOUND)`, 'GROUP_NOT_FOUND');
  return found.group_id;
}

export async function groupList(ctx: Context, flags: TenantFlag & { json?: boolean }): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const groups = await allPages<FleetGroup>(fleetApi(ctx, tenant), '/v1/fleet/groups', 'groups');
  if (flags.json) return printJson(ctx.out, groups);
  if (groups.length === 0) return ctx.out.stdout(`no groups in tenant ${tenant}\n`);
  const rows = groups.map((g) => ({ group: g.group_id, name: g.name, region: g.region, vehicles: g.vehicle_count, tags: g.tags.join(',') || null }));
  ctx.out.stdout(table(rows, ['group', 'name', 'region', 'vehicles', 'tags']));
}

export interface GroupCreateFlags extends TenantFlag {
  description?: string;
  region?: string;
  tag?: string[];
  json?: boolean;
}

export async function groupCreate(ctx: Context, name: string, flags: GroupCreateFlags): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const body = { name, description: flags.description, region: flags.region, tags: flags.tag };
  const g = await fleetApi(ctx, tenant)<FleetGroup>('POST', '/v1/fleet/groups', body);
  if (flags.json) return printJson(ctx.out, g);
  ctx.out.stdout(`created group ${g.group_id} "${g.name}" in tenant ${tenant}\n`);
}

export async function groupShow(ctx: Context, ref: string, flags: TenantFlag & { json?: boolean }): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  const id = await groupIdOf(call, tenant, ref);
  const g = await call<FleetGroup>('GET', `/v1/fleet/groups/${encodeURIComponent(id)}`);
  if (flags.json) return printJson(ctx.out, g);
  ctx.out.stdout(
    describe([
      ['group', g.group_id],
      ['name', g.name],
      ['tenant', tenant],
      ['description', g.description],
      ['region', g.region],
      ['tags', g.tags.join(', ') || null],
      ['vehicles', g.vehicle_count > 0 ? `${g.vehicle_count} (tether fleet vehicles list --group ${g.group_id})` : 0],
      ['created', `${shortTime(g.created_at)} by ${g.created_by}`],
    ]),
  );
}

/** Puts a vehicle in a group (moving it out of the one it was in). */
const assign = (call: FleetApi, vehicleId: string, groupId: string) =>
  call<FleetAssignment>('PUT', `/v1/fleet/vehicles/${encodeURIComponent(vehicleId)}/group`, { group_id: groupId });

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

export async function vehicleAssign(ctx: Context, vehicleId: string, flags: TenantFlag & { group: string; json?: boolean }): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  const a = await assign(call, vehicleId, await groupIdOf(call, tenant, flags.group));
  if (flags.json) return printJson(ctx.out, a);
  ctx.out.stdout(`assigned vehicle ${a.vehicle_id} (VIN ${a.vin}) to group ${a.group_id} "${a.group_name}"\n`);
}

export async function vehicleList(ctx: Context, flags: TenantFlag & { group: string; json?: boolean }): Promise<void> {
  const tenant = await tenantOf(ctx, flags);
  const call = fleetApi(ctx, tenant);
  const id = await groupIdOf(call, tenant, flags.group);
  const vehicles = await allPages<FleetGroupVehicles['vehicles'][number]>(call, `/v1/fleet/groups/${encodeURIComponent(id)}/vehicles`, 'vehicles');
  if (flags.json) return printJson(ctx.out, vehicles);
  if (vehicles.length === 0) return ctx.out.stdout(`no vehicles in group ${id}\n`);
  ctx.out.stdout(
    table(
      vehicles.map((v) => ({ vehicle: v.vehicle_id, vin: v.vin, status: v.status })),
      ['vehicle', 'vin', 'status'],
    ),
  );
}
