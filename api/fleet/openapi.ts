/**
 * @module The OpenAPI operations of the fleet interface (./routes.ts): `X-Tenant-ID` on every
 * operation, scopes `fleet:read` / `fleet:write`, its own envelope and error dialect.
 */
import { assignBody, fleetAssignment, fleetGroup, fleetGroupPage, fleetGroupVehicles, groupBody, pageQuery, vehicleBody } from '../../shared/api/fleet';
import { fleetBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';
import { tenantErrors, vehicleOperations, vehicleResponse } from './openapi-vehicles';

const group = fleetBody('FleetGroupResponse', fleetGroup);
const groupId = { groupId: 'the group’s id (grp_…)' };

export const fleetOperations: OperationSpec[] = [
  {
    method: 'post',
    path: '/v1/fleet/groups',
    operationId: 'createFleetGroup',
    tag: 'fleet',
    summary: 'Create a group',
    description: 'Scope `fleet:write`. Names are unique per tenant, ignoring case and surrounding spaces.',
    auth: 'bearer',
    tenant: true,
    idempotent: true,
    etag: { of: 'the group', always: true },
    body: { schema: groupBody },
    responses: { 201: { description: 'the group', json: fleetBody('FleetGroupCreatedResponse', fleetGroup) } },
    errors: {
      ...tenantErrors,
      400: `${tenantErrors[400]}, a missing name (\`MISSING_REQUIRED_FIELD\`) or a malformed body (\`VALIDATION_ERROR\`)`,
      409: 'a group of that name exists in the tenant (`GROUP_NAME_CONFLICT`)',
    },
  },
  {
    method: 'get',
    path: '/v1/fleet/groups',
    operationId: 'listFleetGroups',
    tag: 'fleet',
    summary: 'The tenant’s groups',
    description: 'Scope `fleet:read`.',
    auth: 'bearer',
    tenant: true,
    query: pageQuery,
    responses: { 200: { description: 'a page of groups', json: fleetBody('FleetGroupPageResponse', fleetGroupPage) } },
    errors: { ...tenantErrors, 400: `${tenantErrors[400]}, or a malformed page or limit` },
  },
  {
    method: 'get',
    path: '/v1/fleet/groups/{groupId}',
    operationId: 'getFleetGroup',
    tag: 'fleet',
    summary: 'A group',
    description: 'Scope `fleet:read`.',
    auth: 'bearer',
    tenant: true,
    params: groupId,
    etag: { of: 'the group (its fields and vehicle count)', always: true },
    responses: { 200: { description: 'the group', json: group } },
    errors: { ...tenantErrors, 404: 'no such group in the tenant (`GROUP_NOT_FOUND`)' },
  },
  {
    method: 'get',
    path: '/v1/fleet/groups/{groupId}/vehicles',
    operationId: 'listFleetGroupVehicles',
    tag: 'fleet',
    summary: 'A group’s vehicles',
    description: 'Scope `fleet:read`.',
    auth: 'bearer',
    tenant: true,
    params: groupId,
    query: pageQuery,
    responses: { 200: { description: 'a page of the group’s vehicles', json: fleetBody('FleetGroupVehiclesResponse', fleetGroupVehicles) } },
    errors: { ...tenantErrors, 400: `${tenantErrors[400]}, or a malformed page or limit`, 404: 'no such group in the tenant (`GROUP_NOT_FOUND`)' },
  },
  {
    method: 'post',
    path: '/v1/fleet/vehicles',
    operationId: 'registerFleetVehicle',
    tag: 'fleet',
    summary: 'Register a vehicle',
    description: 'Scope `fleet:write`. VIN: 17 of [A-HJ-NPR-Z0-9]; `device_id` must name a registered device.',
    auth: 'bearer',
    tenant: true,
    idempotent: true,
    etag: { of: 'the vehicle', always: true },
    body: { schema: vehicleBody },
    responses: { 201: { description: 'the vehicle', json: vehicleResponse } },
    errors: {
      ...tenantErrors,
      400: `${tenantErrors[400]}, a missing vin (\`MISSING_REQUIRED_FIELD\`), a malformed body or an unknown device (\`VALIDATION_ERROR\`)`,
      409: 'a vehicle with that id or VIN exists in the tenant (`VEHICLE_CONFLICT`)',
    },
  },
  {
    method: 'put',
    path: '/v1/fleet/vehicles/{vehicleId}/group',
    operationId: 'assignFleetVehicle',
    tag: 'fleet',
    summary: 'Move a vehicle into a group',
    description: 'Scope `fleet:write`. Both groups’ counts follow.',
    auth: 'bearer',
    tenant: true,
    params: { vehicleId: 'the vehicle’s id (veh_…)' },
    ifMatch: 'the target group’s ETag (GET /v1/fleet/groups/{groupId})',
    body: { schema: assignBody },
    responses: { 200: { description: 'the assignment', json: fleetBody('FleetAssignmentResponse', fleetAssignment) } },
    errors: {
      ...tenantErrors,
      400: `${tenantErrors[400]}, a missing group_id (\`MISSING_REQUIRED_FIELD\`) or a malformed body (\`VALIDATION_ERROR\`)`,
      404: 'no such vehicle (`VEHICLE_NOT_FOUND`) or group (`GROUP_NOT_FOUND`) in the tenant',
    },
  },
  ...vehicleOperations,
];
