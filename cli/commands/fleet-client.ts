/**
 * @module What every `tether fleet` command shares: the tenant to act in (`--tenant`, else the
 * token's only one), a client of the fleet interface in it that reads every page of a list, and
 * how a group (by id or name) and a vehicle (by id or VIN) named on the command line are found.
 */
import { VIN_PATTERN, type FleetGroup, type FleetPagination, type FleetVehicle, type FleetVehiclePage } from '../../shared/api/fleet';
import type { Me } from '../../shared/api/identity';
import type { RequestOptions } from '../api-client';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';

/** The fleet interface's largest page. */
const LIMIT = 100;

export interface TenantFlag {
  tenant?: string;
}

/** The tenant to act in: `--tenant`, else the token's only one; a usage error when that is not one tenant. */
export async function tenantOf(ctx: Context, flags: TenantFlag): Promise<string> {
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
export function fleetApi(ctx: Context, tenant: string) {
  const options: RequestOptions = { headers: { 'x-tenant-id': tenant } };
  return <T>(method: string, path: string, body?: unknown) => ctx.api().request<T>(method, path, body, options);
}
export type FleetApi = ReturnType<typeof fleetApi>;

/** Every page of a fleet list: `key` names the items in each page's `data`; `query` more parameters. */
export async function allPages<T>(call: FleetApi, path: string, key: string, query = ''): Promise<T[]> {
  const items: T[] = [];
  for (let page = 1; ; page++) {
    const data = await call<Record<string, unknown> & { pagination: FleetPagination }>('GET', `${path}?page=${page}&limit=${LIMIT}${query}`);
    items.push(...(data[key] as T[]));
    if (page >= data.pagination.total_pages) return items;
  }
}

/** The id of the group `ref` names: an id (`grp_…`) as it is, else a group name, matched as the server matches names. */
export async function groupIdOf(call: FleetApi, tenant: string, ref: string): Promise<string> {
  if (ref.startsWith('grp_')) return ref;
  const key = (name: string) => name.trim().normalize('NFC').toLowerCase();
  const found = (await allPages<FleetGroup>(call, '/v1/fleet/groups', 'groups')).find((g) => key(g.name) === key(ref));
  if (!found) throw new CliError(`no group named "${ref}" in tenant ${tenant} (GROUP_NOT_FOUND)`, 'GROUP_NOT_FOUND');
  return found.group_id;
}

/**
 * The vehicle `ref` names: a VIN (17 of A-HJ-NPR-Z0-9, in either case) is looked up in the tenant
 * (`GET /v1/fleet/vehicles?vin=`), anything else is a vehicle id. The two never meet: an id
 * starts with `veh_`, and `_` is never in a VIN.
 */
export async function vehicleOf(call: FleetApi, tenant: string, ref: string): Promise<FleetVehicle> {
  const vin = ref.toUpperCase();
  if (!VIN_PATTERN.test(vin)) return call<FleetVehicle>('GET', `/v1/fleet/vehicles/${encodeURIComponent(ref)}`);
  const page = await call<FleetVehiclePage>('GET', `/v1/fleet/vehicles?vin=${vin}`);
  const found = page.vehicles[0];
  if (!found) throw new CliError(`no vehicle with VIN ${vin} in tenant ${tenant} (VEHICLE_NOT_FOUND)`, 'VEHICLE_NOT_FOUND');
  return found;
}

/** The id of the vehicle `ref` names (`vehicleOf`), without a request when it is an id. */
export async function vehicleIdOf(call: FleetApi, tenant: string, ref: string): Promise<string> {
  return VIN_PATTERN.test(ref.toUpperCase()) ? (await vehicleOf(call, tenant, ref)).vehicle_id : ref;
}
