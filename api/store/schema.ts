/**
 * @module The tables as the query builder sees them, one interface per table, for both stores
 * (SQLite and PostgreSQL). Values are what both drivers hand back: timestamps as ISO-8601 text
 * (compared as bytes: PostgreSQL's text columns use the "C" collation), flags as 0/1 integers,
 * JSON as text, binary as Buffer. The migrations of each dialect create exactly these columns
 * (test/unit/api/store/schema-parity.test.ts holds them to it).
 */
import type { ColumnType, Generated, Insertable, Kysely, Selectable, Transaction } from 'kysely';
import type { AccessPoliciesTable, AccessRequestsTable, WebhookDeliveriesTable, WebhooksTable } from './schema-access';
import type { BlobChunksTable, BlobsTable, JobExecutionsTable, JobsTable } from './schema-jobs';

export type { AccessPoliciesTable, AccessRequestsTable, WebhookDeliveriesTable, WebhooksTable } from './schema-access';
export type { BlobChunksTable, BlobsTable, JobExecutionsTable, JobsTable } from './schema-jobs';

/** A column the database fills when the insert leaves it out. */
type Defaulted<T> = ColumnType<T, T | undefined, T>;

export interface UsersTable {
  username: string;
  role: string | null;
  kind: string;
  password_hash: string | null;
  created_at: string;
  disabled: Defaulted<number>;
  deleted_at: string | null;
}

export interface TokensTable {
  token_id: string;
  token_hash: string;
  username: string;
  scopes: Defaulted<string>;
  tenants: Defaulted<string>;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
}

export interface DevicesTable {
  device_id: string;
  agent_token_hash: string;
  labels: Defaulted<string>;
  agent_status: Defaulted<string>;
  agent_version: string | null;
  last_seen_at: string | null;
  created_at: string;
  forward_allow: string | null;
  presence_generation: Defaulted<number>;
  presence_node: string | null;
  presence_url: string | null;
}

export interface SessionsTable {
  session_id: string;
  device_id: string;
  protocol: string;
  status: string;
  ttl_seconds: number;
  opened_by: string;
  opened_at: string;
  expires_at: string;
  closed_at: string | null;
  close_reason: string | null;
  bytes_to_device: Defaulted<number>;
  bytes_from_device: Defaulted<number>;
  trace_id: string;
  token_id: string | null;
  token_expires_at: string | null;
  targets: string | null;
  /** The access grant (access_requests) it was opened under; null when no policy applied. */
  access_request_id: string | null;
}

/** The remote-access audit: session events (session_id, device_id, protocol set), job events (job_id set) and access events (request_id, device_id set). */
export interface AuditEventsTable {
  id: Generated<number>;
  event: string;
  session_id: string | null;
  device_id: string | null;
  protocol: string | null;
  actor: string;
  owner: string;
  reason: string | null;
  at: string;
  trace_id: string;
  targets: string | null;
  job_id: string | null;
  request_id: string | null;
}

export interface SecretsTable {
  name: string;
  value: Buffer;
}

export interface ServicesTable {
  name: string;
  environment: string;
  status: string;
  current_revision: string;
  previous_revision: string | null;
  desired_replicas: number;
  ready_replicas: Defaulted<number>;
  sync_status: string;
  canary_revision: string | null;
  canary_weight: number | null;
  rollout: Defaulted<number>;
  last_deployed_at: string;
  created_at: string;
  status_message: string | null;
}

export interface RevisionsTable {
  service: string;
  environment: string;
  revision: string;
  image: string;
  spec: string;
  replicas: number;
  deployed_at: string;
  deployed_by: string;
}

export interface DeploymentAuditTable {
  id: Generated<number>;
  event: string;
  service: string;
  environment: string;
  revision: string | null;
  actor: string;
  at: string;
  details: Defaulted<string>;
}

export interface FleetGroupsTable {
  tenant_id: string;
  group_id: string;
  name: string;
  name_key: string;
  description: string | null;
  region: string | null;
  tags: Defaulted<string>;
  vehicle_count: Defaulted<number>;
  created_at: string;
  created_by: string;
}

export interface FleetVehiclesTable {
  tenant_id: string;
  vehicle_id: string;
  vin: string;
  status: Defaulted<string>;
  device_id: string | null;
  group_id: string | null;
  assigned_at: string | null;
  assigned_by: string | null;
  created_at: string;
}

export interface RecordingsTable {
  session_id: string;
  device_id: string;
  username: string;
  started_at: string;
  ended_at: string | null;
  duration_s: Defaulted<number>;
  bytes: Defaulted<number>;
  stored_bytes: Defaulted<number>;
  sha256: string;
  truncated: Defaulted<number>;
  input: Defaulted<number>;
  file: string;
}

export interface IdempotencyKeysTable {
  caller: string;
  key_hash: string;
  fingerprint: string;
  created_at: number;
  status: number | null;
  response: Buffer | null;
}

export interface RateLimitHitsTable {
  id: Generated<number>;
  bucket: string;
  at: number;
}

export interface RecordingChunksTable {
  session_id: string;
  seq: number;
  data: Buffer;
}

export interface PeersTable {
  node: string;
  url: string;
  started_at: string;
  seen_at: number;
}

/** The audit log of changes to who can do what (api/audit/); `count` > 1: repeats folded into one row. */
export interface AuditLogTable {
  id: Generated<number>;
  event: string;
  actor: string;
  target_kind: string;
  target_id: string;
  details: Defaulted<string>;
  outcome: string;
  at: string;
  trace_id: string;
  source_ip: string | null;
  count: Defaulted<number>;
  last_at: string | null;
}

/** Every table, by name. */
export interface Schema {
  users: UsersTable;
  tokens: TokensTable;
  devices: DevicesTable;
  sessions: SessionsTable;
  audit_events: AuditEventsTable;
  secrets: SecretsTable;
  services: ServicesTable;
  revisions: RevisionsTable;
  deployment_audit: DeploymentAuditTable;
  fleet_groups: FleetGroupsTable;
  fleet_vehicles: FleetVehiclesTable;
  recordings: RecordingsTable;
  idempotency_keys: IdempotencyKeysTable;
  rate_limit_hits: RateLimitHitsTable;
  recording_chunks: RecordingChunksTable;
  peers: PeersTable;
  audit_log: AuditLogTable;
  jobs: JobsTable;
  job_executions: JobExecutionsTable;
  blobs: BlobsTable;
  blob_chunks: BlobChunksTable;
  access_policies: AccessPoliciesTable;
  access_requests: AccessRequestsTable;
  webhooks: WebhooksTable;
  webhook_deliveries: WebhookDeliveriesTable;
}

/** The tables in an order that respects their foreign keys (parents first): copies insert in it. */
export const TABLES: readonly (keyof Schema)[] = [
  'users',
  'tokens',
  'devices',
  'sessions',
  'audit_events',
  'secrets',
  'services',
  'revisions',
  'deployment_audit',
  'fleet_groups',
  'fleet_vehicles',
  'recordings',
  'idempotency_keys',
  'rate_limit_hits',
  'recording_chunks',
  'peers',
  'audit_log',
  'jobs',
  'job_executions',
  'blobs',
  'blob_chunks',
  'access_policies',
  'access_requests',
  'webhooks',
  'webhook_deliveries',
];

/** Where queries run: the database, or a transaction on it. Repositories take either. */
export type Executor = Kysely<Schema> | Transaction<Schema>;

export type Row<T extends keyof Schema> = Selectable<Schema[T]>;
export type NewRow<T extends keyof Schema> = Insertable<Schema[T]>;

/** Runs `fn` in a transaction, or inside the one `db` already is. */
export function atomically<T>(db: Executor, fn: (tx: Executor) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn);
}

/** An UPDATE's or DELETE's count of rows, as both drivers report it. */
export function affected(result: { numUpdatedRows?: bigint; numDeletedRows?: bigint }): number {
  return Number(result.numUpdatedRows ?? result.numDeletedRows ?? 0n);
}
