/**
 * @module The fleet interface over HTTP (docs/http-api.md, fleet groups): tenant-scoped groups and
 * vehicles, `X-Tenant-ID` on every operation, scopes `fleet:read` / `fleet:write`. Its envelope
 * and its error dialect are its own (`./errors`).
 */
import { z } from 'zod';
import type { FleetCode } from './errors';
import { count, intParam, named, timestamp } from './common';

export const TENANT_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** A VIN: 17 characters of A-Z and 0-9 without I, O and Q. Never a vehicle id, which starts with `veh_`. */
export const VIN_PATTERN = /^[A-HJ-NPR-Z0-9]{17}$/;

/** The codes of its own the fleet interface answers with (docs/http-api.md, fleet groups). */
export const FLEET_OWN_ERRORS = [
  'MISSING_REQUIRED_FIELD',
  'MISSING_TENANT_ID',
  'TENANT_FORBIDDEN',
  'INSUFFICIENT_SCOPE',
  'GROUP_NOT_FOUND',
  'VEHICLE_NOT_FOUND',
  'GROUP_NAME_CONFLICT',
  'VEHICLE_CONFLICT',
] as const satisfies readonly FleetCode[];

// Requests

export const groupBody = z.strictObject({
  name: z
    .string()
    .max(1000)
    .refine((n) => n.trim().length > 0, 'must not be blank')
    .refine((n) => n.trim().length <= 100, 'must be at most 100 characters'),
  description: z.string().max(1000).optional(),
  region: z
    .string()
    .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be a lower-case hyphenated region name, e.g. eu-west-1')
    .max(64)
    .optional(),
  tags: z.array(z.string().min(1).max(64)).max(50).optional(),
});
export type GroupBody = z.input<typeof groupBody>;

export const vehicleBody = z.strictObject({
  vin: z.string().regex(VIN_PATTERN, 'must be 17 characters of A-Z (without I, O, Q) and 0-9'),
  vehicle_id: z
    .string()
    .regex(/^veh_[a-z0-9]{1,40}$/, 'must look like veh_ followed by lower-case letters and digits')
    .optional(),
  device_id: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be a device id')
    .optional(),
});
export type VehicleBody = z.input<typeof vehicleBody>;

export const assignBody = z.strictObject({ group_id: z.string().min(1).max(64) });
export const pageQuery = z.strictObject({ page: intParam(1, 1_000_000, 1), limit: intParam(1, 100, 20) });

/** `GET /v1/fleet/vehicles`: a page of the tenant's vehicles; `unassigned=true` those in no group, `vin` the one with that VIN. */
export const vehicleQuery = z.strictObject({
  page: intParam(1, 1_000_000, 1),
  limit: intParam(1, 100, 20),
  unassigned: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .transform((v) => v === 'true')
    .optional(),
  vin: z.string().regex(VIN_PATTERN, 'must be 17 characters of A-Z (without I, O, Q) and 0-9').optional(),
});
export type VehicleQuery = z.output<typeof vehicleQuery>;

// Responses

export const fleetGroup = named(
  'FleetGroup',
  z.strictObject({
    group_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    region: z.string().nullable(),
    tags: z.array(z.string()),
    vehicle_count: count,
    created_at: timestamp,
    created_by: z.string(),
  }),
);
export type FleetGroup = z.infer<typeof fleetGroup>;

export const fleetVehicle = named(
  'FleetVehicle',
  z.strictObject({
    vehicle_id: z.string(),
    vin: z.string(),
    status: z.string(),
    device_id: z.string().nullable(),
    group_id: z.string().nullable(),
    created_at: timestamp,
  }),
);
export type FleetVehicle = z.infer<typeof fleetVehicle>;

export const fleetPagination = named(
  'FleetPagination',
  z.strictObject({ page: z.int().min(1), limit: z.int().min(1), total_records: count, total_pages: count }),
);
export type FleetPagination = z.infer<typeof fleetPagination>;

export const fleetAssignment = named(
  'FleetAssignment',
  z.strictObject({
    vehicle_id: z.string(),
    vin: z.string(),
    group_id: z.string(),
    group_name: z.string(),
    assigned_at: timestamp,
    assigned_by: z.string(),
  }),
);
export type FleetAssignment = z.infer<typeof fleetAssignment>;

export const fleetVehiclePage = named('FleetVehiclePage', z.strictObject({ vehicles: z.array(fleetVehicle), pagination: fleetPagination }));
export type FleetVehiclePage = z.infer<typeof fleetVehiclePage>;

/** The answer of `DELETE /v1/fleet/vehicles/{vehicleId}`: what was deleted, and the group it left. */
export const fleetVehicleDeleted = named(
  'FleetVehicleDeleted',
  z.strictObject({ vehicle_id: z.string(), vin: z.string(), group_id: z.string().nullable(), deleted: z.literal(true) }),
);
export type FleetVehicleDeleted = z.infer<typeof fleetVehicleDeleted>;

export const fleetGroupPage = named('FleetGroupPage', z.strictObject({ groups: z.array(fleetGroup), pagination: fleetPagination }));
export type FleetGroupPage = z.infer<typeof fleetGroupPage>;

export const fleetGroupVehicles = named(
  'FleetGroupVehicles',
  z.strictObject({
    group_id: z.string(),
    group_name: z.string(),
    vehicles: z.array(z.strictObject({ vehicle_id: z.string(), vin: z.string(), status: z.string(), device_id: z.string().nullable() })),
    pagination: fleetPagination,
  }),
);
export type FleetGroupVehicles = z.infer<typeof fleetGroupVehicles>;
