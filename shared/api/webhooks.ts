/**
 * @module Webhooks (CONTRACT 10.3; docs/access.md, webhooks): an administrator's subscription of an
 * http(s) URL to audit events, each delivered from a durable outbox as `POST url` with JSON
 * `{id, event, at, data}` and `X-Tether-Event`, `X-Tether-Delivery`, `X-Tether-Signature:
 * sha256=<hex HMAC-SHA256 of the raw body with the secret>`, retried with backoff until a 2xx for
 * up to 24 hours, across restarts. `/v1/webhooks` takes and answers these.
 */
import { z } from 'zod';
import { ACCESS_EVENTS } from './access';
import { AUDIT_LOG_EVENTS } from './audit';
import { named, pagingParams, timestamp } from './common';
import type { ErrorCode } from './errors';
import { AUDIT_EVENTS } from './sessions';

/** Every event a webhook may subscribe to: the access events and every other audit event. */
export const WEBHOOK_EVENTS = [...new Set([...ACCESS_EVENTS, ...AUDIT_EVENTS, ...AUDIT_LOG_EVENTS])] as const;
export type WebhookEventName = (typeof WEBHOOK_EVENTS)[number];

export const WEBHOOK_HEADERS = { event: 'x-tether-event', delivery: 'x-tether-delivery', signature: 'x-tether-signature' } as const;

export const WEBHOOK_LIMITS = {
  secretChars: { min: 16, max: 256 },
  urlChars: 2048,
  /** A delivery is retried until a 2xx for this long after it was created, then it ends `failed`. */
  retryForSeconds: 86_400,
  /** How long one POST may take before it counts as failed. */
  attemptTimeoutMs: 10_000,
} as const;

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

export const WEBHOOK_ERRORS = ['forbidden', 'not_found'] as const satisfies readonly ErrorCode[];

// Requests

export const createWebhookBody = z.strictObject({
  url: z
    .string()
    .max(WEBHOOK_LIMITS.urlChars)
    .refine((u) => URL.canParse(u) && ['http:', 'https:'].includes(new URL(u).protocol), 'must be an http:// or https:// URL'),
  events: z
    .array(z.enum(WEBHOOK_EVENTS as unknown as [WebhookEventName, ...WebhookEventName[]]))
    .min(1)
    .transform((e) => [...new Set(e)]),
  secret: z.string().min(WEBHOOK_LIMITS.secretChars.min).max(WEBHOOK_LIMITS.secretChars.max),
  /** A body Slack's incoming webhooks take (`{text}`), instead of the JSON above (then unsigned fields are the same headers). */
  format: z.enum(['json', 'slack']).optional(),
});
export type CreateWebhookBody = z.infer<typeof createWebhookBody>;

export const deliveriesQuery = z.strictObject({ ...pagingParams(200, 50), status: z.enum(DELIVERY_STATUSES).optional() });

/** `GET /v1/webhooks`: the live webhooks, newest first. */
export const webhooksQuery = z.strictObject(pagingParams(200, 50));

// Responses

export const webhook = named(
  'Webhook',
  z.strictObject({
    webhook_id: z.string().describe('wh_…'),
    url: z.string(),
    events: z.array(z.string()),
    format: z.enum(['json', 'slack']),
    created_by: z.string(),
    created_at: timestamp,
  }),
);
export type Webhook = z.infer<typeof webhook>;

export const delivery = named(
  'WebhookDelivery',
  z.strictObject({
    delivery_id: z.string().describe('whd_…: also the body’s `id` and X-Tether-Delivery'),
    webhook_id: z.string(),
    event: z.string(),
    status: z.enum(DELIVERY_STATUSES),
    attempts: z.int().min(0),
    last_status_code: z.int().nullable(),
    last_error: z.string().nullable(),
    created_at: timestamp,
    next_attempt_at: timestamp.nullable(),
    delivered_at: timestamp.nullable(),
  }),
);
export type Delivery = z.infer<typeof delivery>;

/** The body of a delivery (format `json`). */
export const deliveryBody = z.strictObject({ id: z.string(), event: z.string(), at: timestamp, data: z.record(z.string(), z.unknown()) });
export type DeliveryBody = z.infer<typeof deliveryBody>;
