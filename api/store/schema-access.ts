/**
 * @module The tables of access requests and webhooks (migration 15) as the query builder sees
 * them; part of schema.ts, kept apart so each file stays short.
 */
import type { ColumnType } from 'kysely';

/** A column the database fills when the insert leaves it out (as in ./schema.ts, which imports this file). */
type Defaulted<T> = ColumnType<T, T | undefined, T>;

/** A policy (CONTRACT 10.3): `labels` a JSON object, `protocols` a JSON array; `deleted_at` set by DELETE. */
export interface AccessPoliciesTable {
  policy_id: string;
  name: string;
  labels: string;
  protocols: string;
  max_duration_seconds: number;
  created_by: string;
  created_at: string;
  deleted_at: string | null;
}

/** A request and, once approved, its grant (`starts_at` to `ends_at`); never deleted. */
export interface AccessRequestsTable {
  request_id: string;
  requester: string;
  device_id: string;
  protocols: string;
  reason: string;
  duration_seconds: number;
  status: string;
  created_at: string;
  expires_at: string;
  reviewed_by: string | null;
  review_reason: string | null;
  reviewed_at: string | null;
  starts_at: string | null;
  ends_at: string | null;
  revoked_by: string | null;
  revoke_reason: string | null;
  revoked_at: string | null;
}

/** A subscriber: `events` a JSON array; `secret` signs deliveries and is never shown. */
export interface WebhooksTable {
  webhook_id: string;
  url: string;
  events: string;
  secret: string;
  format: string;
  created_by: string;
  created_at: string;
  deleted_at: string | null;
}

/** The outbox: one row per event and webhook; `body` the exact JSON posted on every attempt. */
export interface WebhookDeliveriesTable {
  delivery_id: string;
  webhook_id: string;
  event: string;
  body: string;
  status: string;
  attempts: Defaulted<number>;
  next_attempt_at: string | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: string;
  delivered_at: string | null;
  claimed_until: string | null;
}
