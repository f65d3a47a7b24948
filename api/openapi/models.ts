/**
 * @module What the API answers with, as zod schemas for the OpenAPI document (docs/http-api.md is
 * the prose of the same shapes). Every object is strict, so a field the code adds without
 * documenting it fails the end-to-end tests, which check each response against the document.
 * Schemas registered in `models` become `components.schemas` and are referred to by name.
 */
import { z } from 'zod';
import { SCOPES } from '../access';
import { roleSchema } from '../roles';
import { AUDIT_EVENTS } from '../store/audit';
import { closeReasonSchema, SESSION_PROTOCOLS } from '../../shared/control-channel';

/** The named schemas of the document: `components.schemas.<id>`. */
export const models = z.registry<{ id: string }>();

/** Registers `schema` as `components.schemas.<id>`. */
export function named<S extends z.ZodType>(id: string, schema: S): S {
  models.add(schema, { id });
  return schema;
}

export const timestamp = named('Timestamp', z.iso.datetime().describe('an ISO 8601 UTC date-time with milliseconds'));
const count = z.int().min(0);

export const user = named(
  'User',
  z.strictObject({
    username: z.string(),
    role: roleSchema.nullable(),
    kind: z.enum(['human', 'service']),
    disabled: z.boolean(),
    created_at: timestamp,
  }),
);

export const issuedToken = named(
  'IssuedToken',
  z.strictObject({
    token: z.string().describe('the secret, shown this once'),
    token_id: z.string(),
    expires_at: timestamp.nullable().describe('null: never'),
  }),
);

export const token = named(
  'Token',
  z.strictObject({
    token_id: z.string(),
    username: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    tenants: z.array(z.string()),
    created_at: timestamp,
    expires_at: timestamp.nullable(),
    revoked_at: timestamp.nullable(),
    current: z.boolean().describe('true for the token making the request'),
  }),
);

export const me = named(
  'Me',
  z.strictObject({
    username: z.string(),
    role: roleSchema.nullable(),
    kind: z.enum(['human', 'service']),
    scopes: z.array(z.enum(SCOPES)),
    tenants: z.array(z.string()),
    token_id: z.string(),
    expires_at: timestamp.nullable(),
  }),
);

const agentStatus = z.enum(['online', 'offline']);

export const device = named(
  'Device',
  z.strictObject({
    device_id: z.string(),
    agent_status: agentStatus,
    last_seen_at: timestamp.nullable(),
    labels: z.record(z.string(), z.string()),
    agent_version: z.string().nullable(),
    created_at: timestamp,
    forward_allow: z.array(z.string()).nullable().describe('the port-forward patterns its agent announced; null: it does not forward ports'),
  }),
);

export const recording = named(
  'Recording',
  z.strictObject({
    bytes: count.describe('size of the asciicast GET …/recording answers with'),
    sha256: z.string(),
    duration_s: z.number().min(0),
    truncated: z.boolean(),
    stored_bytes: count.describe('size of the compressed file'),
    input: z.boolean().describe('whether keystrokes are recorded'),
    in_progress: z.boolean(),
  }),
);

export const session = named(
  'Session',
  z.strictObject({
    session_id: z.string(),
    device_id: z.string(),
    protocol: z.enum(SESSION_PROTOCOLS),
    status: z.enum(['open', 'closed']),
    ttl_seconds: z.int(),
    opened_by: z.string(),
    opened_at: timestamp,
    expires_at: timestamp,
    closed_at: timestamp.nullable(),
    close_reason: z.nullable(closeReasonSchema),
    websocket_url: z
      .string()
      .optional()
      .describe('the stream with its ticket, bound to the token that asked: while the session is open, for its owner and administrators with scope sessions:write'),
    bytes_to_device: count,
    bytes_from_device: count,
    trace_id: z.string(),
    targets: z.array(z.string()).optional().describe('a port-forward session’s targets, canonical HOST:PORT'),
    recording: recording.nullable(),
  }),
);

/** Who holds a device's open session of a protocol: the `holder` of a 409 on opening one. */
export const sessionHolder = named(
  'SessionHolder',
  z.strictObject({
    opened_by: z.string().describe('the username of its owner'),
    opened_at: timestamp,
  }),
);

export const auditEvent = named(
  'AuditEvent',
  z.strictObject({
    id: z.int(),
    event: z.enum(AUDIT_EVENTS),
    session_id: z.string(),
    device_id: z.string(),
    protocol: z.enum(SESSION_PROTOCOLS),
    actor: z.string(),
    reason: z.string().nullable(),
    at: timestamp,
    trace_id: z.string(),
    targets: z.array(z.string()).optional(),
  }),
);

const environment = z.enum(['dev', 'staging', 'prod']);
const serviceBase = {
  name: z.string(),
  environment,
  status: z.enum(['healthy', 'degraded', 'failed', 'deploying']),
  image: z.string(),
  replicas: z.strictObject({ desired: count, ready: count }),
  current_revision: z.string(),
  last_deployed_at: timestamp,
  runtime: z.string().describe('the deployment runtime; "simulated" for the embedded one'),
  canary: z.strictObject({ revision: z.string(), weight: z.int().min(0).max(100) }).optional().describe('while a canary is deployed'),
};

/** A service as listed. */
export const service = named('Service', z.strictObject(serviceBase));

/** A service as read alone. */
export const serviceDetail = named(
  'ServiceDetail',
  z.strictObject({ ...serviceBase, previous_revision: z.string().nullable(), gitops_sync_status: z.enum(['Synced', 'OutOfSync']) }),
);

/** A service as a change (apply, rollback, promote) leaves it. */
export const serviceChange = named(
  'ServiceChange',
  z.strictObject({ ...serviceBase, previous_revision: z.string().nullable(), dry_run: z.boolean() }),
);

export const revision = named(
  'Revision',
  z.strictObject({
    revision: z.string(),
    image: z.string(),
    deployed_at: timestamp,
    deployed_by: z.string(),
    status: z.enum(['current', 'previous', 'available']),
  }),
);

const trafficShare = { revision: z.string(), image: z.string(), weight: z.int().min(0).max(100) };
export const canaryState = named(
  'CanaryState',
  z.strictObject({
    service: z.string(),
    environment,
    canary_active: z.boolean(),
    stable: z.strictObject(trafficShare),
    canary: z.strictObject(trafficShare).nullable(),
  }),
);

export const deploymentEvent = named(
  'DeploymentEvent',
  z.strictObject({
    id: z.int(),
    event: z.string().describe('service.applied, service.rolled_back, service.deleted, canary.weight_set, canary.halted, canary.promoted'),
    service: z.string(),
    environment,
    revision: z.string().nullable(),
    actor: z.string(),
    at: timestamp,
    details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).describe('what the event changed'),
  }),
);

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

export const fleetPagination = named(
  'FleetPagination',
  z.strictObject({ page: z.int().min(1), limit: z.int().min(1), total_records: count, total_pages: count }),
);

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

export const fleetGroupPage = named('FleetGroupPage', z.strictObject({ groups: z.array(fleetGroup), pagination: fleetPagination }));

export const fleetGroupVehicles = named(
  'FleetGroupVehicles',
  z.strictObject({
    group_id: z.string(),
    group_name: z.string(),
    vehicles: z.array(z.strictObject({ vehicle_id: z.string(), vin: z.string(), status: z.string() })),
    pagination: fleetPagination,
  }),
);
