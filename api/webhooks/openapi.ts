/** @module The OpenAPI operations of webhooks (./routes.ts). */
import { createWebhookBody, delivery, deliveriesQuery, WEBHOOK_EVENTS, webhook, webhooksQuery } from '../../shared/api/webhooks';
import { listBody, okBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

const webhookId = { webhookId: 'the webhook’s id (wh_…)' };

export const webhookOperations: OperationSpec[] = [
  {
    method: 'post',
    path: '/v1/webhooks',
    operationId: 'createWebhook',
    tag: 'webhooks',
    summary: 'Subscribe a URL to audit events',
    description:
      'Administrator, scope `identity:write`: any http(s) URL is allowed, loopback and private addresses included, so this is an ' +
      'administrator’s power. Each event is delivered as `POST url` with JSON `{id, event, at, data}` (format `slack`: `{text, id, event, at, data}`), ' +
      'headers `X-Tether-Event`, `X-Tether-Delivery` (the `id`) and `X-Tether-Signature: sha256=<hex HMAC-SHA256 of the raw body with the secret>`; ' +
      'retried with backoff until a 2xx, for up to 24 hours, across restarts. Redirects are not followed. The secret is never answered. ' +
      `Events: ${WEBHOOK_EVENTS.map((e) => `\`${e}\``).join(', ')}.`,
    auth: 'bearer',
    idempotent: true,
    body: { schema: createWebhookBody },
    responses: { 201: { description: 'the webhook, without its secret', json: okBody('WebhookCreatedResponse', webhook, 201) } },
    errors: {
      400: 'malformed body: a URL that is not http(s), an unknown event, a secret of fewer than 16 characters',
      403: 'not an administrator, or the scope is missing',
    },
  },
  {
    method: 'get',
    path: '/v1/webhooks',
    operationId: 'listWebhooks',
    tag: 'webhooks',
    summary: 'The live webhooks, newest first',
    description: 'Administrator, scope `identity:read`. Deleted webhooks are not listed (their deliveries log stays readable).',
    auth: 'bearer',
    query: webhooksQuery,
    responses: { 200: { description: 'a page of webhooks', json: listBody('WebhookListResponse', webhook) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'not an administrator, or the scope is missing' },
  },
  {
    method: 'delete',
    path: '/v1/webhooks/{webhookId}',
    operationId: 'deleteWebhook',
    tag: 'webhooks',
    summary: 'Delete a webhook',
    description: 'Administrator, scope `identity:write`. It gets no more deliveries; those still pending end `failed` (`webhook deleted`).',
    auth: 'bearer',
    params: webhookId,
    responses: { 204: { description: 'deleted' } },
    errors: { 403: 'not an administrator, or the scope is missing', 404: 'no such webhook, or already deleted' },
  },
  {
    method: 'get',
    path: '/v1/webhooks/{webhookId}/deliveries',
    operationId: 'listWebhookDeliveries',
    tag: 'webhooks',
    summary: 'A webhook’s deliveries, newest first',
    description:
      'Administrator, scope `identity:read`; also of a deleted webhook. Each with its `status` (`pending`, `delivered`, `failed`), ' +
      '`attempts`, the last attempt’s `last_status_code` (null: no answer) and `last_error`, and `next_attempt_at` while pending.',
    auth: 'bearer',
    params: webhookId,
    query: deliveriesQuery,
    responses: { 200: { description: 'a page of deliveries', json: listBody('WebhookDeliveryListResponse', delivery) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'not an administrator, or the scope is missing', 404: 'no such webhook' },
  },
];
