/**
 * @module The fleet interface (docs/http-api.md, fleet groups): its own envelope and error codes,
 * the tenant in `X-Tenant-ID` checked against the token's tenants, and scopes `fleet:read` /
 * `fleet:write`. What each operation takes and answers is `shared/api/fleet.ts`.
 */
import { ifMatchOf, setEtag } from '../http/etag';
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { z } from 'zod';
import {
  assignBody,
  groupBody,
  pageQuery,
  TENANT_PATTERN,
  vehicleBody,
  vehicleQuery,
  type FleetAssignment,
  type FleetGroup,
  type FleetGroupPage,
  type FleetGroupVehicles,
  type FleetVehicle,
  type FleetVehicleDeleted,
  type FleetVehiclePage,
} from '../../shared/api/fleet';
import { ApiError } from '../errors';
import { principalOf } from '../http/auth';
import { readJsonBody } from '../http/body';
import { issuesToDetails, parseQuery } from '../http/validate';
import { success } from './envelope';
import type { Fleet } from './fleet';
import { vehicleTag } from './vehicles';

type Scope = 'fleet:read' | 'fleet:write';

/** The tenant of the request, once the token may act in it with `scope`. */
function tenantOf(ctx: Context, scope: Scope): string {
  const tenant = ctx.get('x-tenant-id');
  if (!tenant) throw new ApiError('MISSING_TENANT_ID', 'the X-Tenant-ID header is required');
  if (!TENANT_PATTERN.test(tenant)) {
    throw new ApiError('VALIDATION_ERROR', 'X-Tenant-ID must be 1-64 characters of [A-Za-z0-9._-]', [{ path: 'X-Tenant-ID', message: 'invalid tenant id' }]);
  }
  const p = principalOf(ctx);
  if (!p.tenants.includes('*') && !p.tenants.includes(tenant)) {
    throw new ApiError('TENANT_FORBIDDEN', `this token is not granted tenant ${tenant}`);
  }
  if (!p.scopes.includes('*') && !p.scopes.includes(scope)) {
    throw new ApiError('INSUFFICIENT_SCOPE', `this operation needs scope ${scope}`);
  }
  return tenant;
}

/** Parses a body; absent required fields are MISSING_REQUIRED_FIELD, anything else VALIDATION_ERROR. */
async function bodyOf<S extends z.ZodType>(ctx: Context, schema: S, required: string[]): Promise<z.output<S>> {
  const raw = await readJsonBody(ctx);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ApiError('VALIDATION_ERROR', 'the body must be a JSON object');
  }
  const missing = required.filter((f) => (raw as Record<string, unknown>)[f] === undefined || (raw as Record<string, unknown>)[f] === null);
  if (missing.length > 0) {
    throw new ApiError(
      'MISSING_REQUIRED_FIELD',
      `required field${missing.length > 1 ? 's' : ''} missing: ${missing.join(', ')}`,
      missing.map((path) => ({ path, message: 'is required' })),
    );
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const details = issuesToDetails(parsed.error.issues);
    throw new ApiError('VALIDATION_ERROR', details.map((d) => `${d.path}: ${d.message}`).join('; '), details);
  }
  return parsed.data;
}

/** `page` and `limit`; a bad query is the shared 400, rendered here as VALIDATION_ERROR. */
const pageOf = (ctx: Context) => parseQuery(ctx, pageQuery);

/**
 * The tenant and scope check of a creating POST as a middleware, placed before its
 * `Idempotency-Key` (api/http/idempotency.ts) so that a replay is checked as the request itself.
 */
const writerFirst: Middleware = function tenantBeforeReplay(ctx, next) {
  tenantOf(ctx, 'fleet:write');
  return next();
};

export function fleetRoutes(fleet: Fleet, idempotent: Middleware): Router {
  const router = new Router();

  router.post('/v1/fleet/groups', writerFirst, idempotent, async function createGroup(ctx) {
    const tenant = tenantOf(ctx, 'fleet:write');
    const body = await bodyOf(ctx, groupBody, ['name']);
    const group = await fleet.createGroup(tenant, principalOf(ctx).username, body);
    setEtag(ctx, await fleet.groupTag(tenant, group.group_id));
    success<FleetGroup>(ctx, group, 201);
  });

  router.get('/v1/fleet/groups', async function listGroups(ctx) {
    const tenant = tenantOf(ctx, 'fleet:read');
    success<FleetGroupPage>(ctx, await fleet.listGroups(tenant, pageOf(ctx)));
  });

  router.get('/v1/fleet/groups/:groupId', async function getGroup(ctx) {
    const tenant = tenantOf(ctx, 'fleet:read');
    const group = await fleet.getGroup(tenant, ctx.params.groupId!);
    setEtag(ctx, await fleet.groupTag(tenant, group.group_id));
    success<FleetGroup>(ctx, group);
  });

  router.get('/v1/fleet/groups/:groupId/vehicles', async function groupVehicles(ctx) {
    const tenant = tenantOf(ctx, 'fleet:read');
    success<FleetGroupVehicles>(ctx, await fleet.groupVehicles(tenant, ctx.params.groupId!, pageOf(ctx)));
  });

  router.post('/v1/fleet/vehicles', writerFirst, idempotent, async function registerVehicle(ctx) {
    const tenant = tenantOf(ctx, 'fleet:write');
    const body = await bodyOf(ctx, vehicleBody, ['vin']);
    const vehicle = await fleet.registerVehicle(tenant, body);
    setEtag(ctx, vehicleTag(vehicle));
    success<FleetVehicle>(ctx, vehicle, 201);
  });

  router.get('/v1/fleet/vehicles', async function listVehicles(ctx) {
    const tenant = tenantOf(ctx, 'fleet:read');
    success<FleetVehiclePage>(ctx, await fleet.listVehicles(tenant, parseQuery(ctx, vehicleQuery)));
  });

  router.get('/v1/fleet/vehicles/:vehicleId', async function getVehicle(ctx) {
    const tenant = tenantOf(ctx, 'fleet:read');
    const { vehicle, etag } = await fleet.getVehicle(tenant, ctx.params.vehicleId!);
    setEtag(ctx, etag);
    success<FleetVehicle>(ctx, vehicle);
  });

  router.delete('/v1/fleet/vehicles/:vehicleId', async function deleteVehicle(ctx) {
    const tenant = tenantOf(ctx, 'fleet:write');
    success<FleetVehicleDeleted>(ctx, await fleet.removeVehicle(tenant, ctx.params.vehicleId!, ifMatchOf(ctx)));
  });

  router.delete('/v1/fleet/vehicles/:vehicleId/group', async function unassignVehicle(ctx) {
    const tenant = tenantOf(ctx, 'fleet:write');
    const { vehicle, etag } = await fleet.unassign(tenant, ctx.params.vehicleId!, ifMatchOf(ctx));
    setEtag(ctx, etag);
    success<FleetVehicle>(ctx, vehicle);
  });

  router.put('/v1/fleet/vehicles/:vehicleId/group', async function assignVehicle(ctx) {
    const tenant = tenantOf(ctx, 'fleet:write');
    const body = await bodyOf(ctx, assignBody, ['group_id']);
    success<FleetAssignment>(ctx, await fleet.assign(tenant, principalOf(ctx).username, ctx.params.vehicleId!, body.group_id, ifMatchOf(ctx)));
  });

  return router;
}
