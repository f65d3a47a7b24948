/**
 * @module `tether fleet groups list | create | show`, and (from `./fleet-vehicles`) `tether fleet
 * vehicles …`: the fleet interface (docs/http-api.md, fleet groups), in the tenant named by
 * `--tenant` or, without it, the one tenant the token is granted.
 */
import type { FleetGroup } from '../../shared/api/fleet';
import type { Context } from '../context';
import { describe } from '../describe';
import { printJson, table } from '../output';
import { allPages, fleetApi, groupIdOf, tenantOf, type TenantFlag } from './fleet-client';

export * from './fleet-vehicles';

const shortTime = (iso: string) => iso.replace(/\.\d+Z$/, 'Z');

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
