/**
 * @module The OpenAPI operations on single vehicles of the fleet interface (./routes.ts,
 * ./vehicles.ts): list, read, take out of a group, delete; and the tenant errors every fleet
 * operation shares (./openapi.ts has the groups').
 */
import { fleetVehicle, fleetVehicleDeleted, fleetVehiclePage, vehicleQuery } from '../../shared/api/fleet';
import { fleetBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

/** The errors of the tenant check every fleet operation makes. */
export const tenantErrors = {
  400: 'no or a malformed X-Tenant-ID (`MISSING_TENANT_ID`, `VALIDATION_ERROR`)',
  403: 'the token is not granted the tenant (`TENANT_FORBIDDEN`) or lacks the scope (`INSUFFICIENT_SCOPE`)',
};

const vehicleId = { vehicleId: 'the vehicle’s id (veh_…)' };
/** A vehicle in the fleet envelope (register answers it too). */
export const vehicleResponse = fleetBody('FleetVehicleResponse', fleetVehicle);
const vehicle = vehicleResponse;
const noVehicle = { 404: 'no such vehicle in the tenant (`VEHICLE_NOT_FOUND`)' };

export const vehicleOperations: OperationSpec[] = [
  {
    method: 'get',
    path: '/v1/fleet/vehicles',
    operationId: 'listFleetVehicles',
    tag: 'fleet',
    summary: 'The tenant’s vehicles',
    description:
      'Scope `fleet:read`. In id order; `unassigned=true`: only those in no group; `vin`: only the vehicle with that VIN (a page of one or none), which is how a client finds a vehicle by its VIN.',
    auth: 'bearer',
    tenant: true,
    query: vehicleQuery,
    responses: { 200: { description: 'a page of vehicles', json: fleetBody('FleetVehiclePageResponse', fleetVehiclePage) } },
    errors: { ...tenantErrors, 400: `${tenantErrors[400]}, or a malformed page, limit, unassigned or vin` },
  },
  {
    method: 'get',
    path: '/v1/fleet/vehicles/{vehicleId}',
    operationId: 'getFleetVehicle',
    tag: 'fleet',
    summary: 'A vehicle',
    description: 'Scope `fleet:read`.',
    auth: 'bearer',
    tenant: true,
    params: vehicleId,
    etag: { of: 'the vehicle (its fields, its group among them)', always: true },
    responses: { 200: { description: 'the vehicle', json: vehicle } },
    errors: { ...tenantErrors, ...noVehicle },
  },
  {
    method: 'delete',
    path: '/v1/fleet/vehicles/{vehicleId}/group',
    operationId: 'unassignFleetVehicle',
    tag: 'fleet',
    summary: 'Take a vehicle out of its group',
    description: 'Scope `fleet:write`. The group counts one vehicle fewer; a vehicle in no group is answered as it is.',
    auth: 'bearer',
    tenant: true,
    params: vehicleId,
    ifMatch: 'the vehicle’s ETag (GET /v1/fleet/vehicles/{vehicleId})',
    etag: { of: 'the vehicle', always: true },
    responses: { 200: { description: 'the vehicle, in no group', json: vehicle } },
    errors: { ...tenantErrors, ...noVehicle },
  },
  {
    method: 'delete',
    path: '/v1/fleet/vehicles/{vehicleId}',
    operationId: 'deleteFleetVehicle',
    tag: 'fleet',
    summary: 'Delete a vehicle',
    description: 'Scope `fleet:write`. Its group counts one vehicle fewer; its id and VIN may be registered again.',
    auth: 'bearer',
    tenant: true,
    params: vehicleId,
    ifMatch: 'the vehicle’s ETag (GET /v1/fleet/vehicles/{vehicleId})',
    responses: { 200: { description: 'what was deleted', json: fleetBody('FleetVehicleDeletedResponse', fleetVehicleDeleted) } },
    errors: { ...tenantErrors, ...noVehicle },
  },
];
