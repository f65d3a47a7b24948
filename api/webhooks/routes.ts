/**
 * @module Webhooks over HTTP (CONTRACT 10.3; docs/access.md, webhooks): administrators create,
 * list and delete subscriptions and read each one's deliveries log. A webhook sends audit events to
 * any http(s) URL, loopback included, so creating one is an administrator's power with
 * `identity:write` (as issuing tokens is) and reading them `identity:read`. The secret signs
 * deliveries and is never answered.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { createWebhookBody, deliveriesQuery, webhooksQuery, type Delivery, type Webhook } from '../../shared/api/webhooks';
import { requireAccess } from '../access';
import { notFound } from '../errors';
import { principalOf } from '../http/auth';
import { ok, okList } from '../http/envelope';
import { offsetOf, parseBody, parseQuery } from '../http/validate';
import { auditSourceOf, eventsOf, recordAudit } from '../audit/recorder';
import type { Store } from '../store/index';
import { atomically } from '../store/schema';
import { createWebhookRepo, type WebhookRow } from '../store/webhooks';

export interface WebhookRoutesDeps {
  store: Store;
  /** Safe retries of creates (api/http/idempotency.ts). */
  idempotent: Middleware;
  now: () => number;
}

/** A webhook as answered: everything but its secret and deletion mark. */
export const webhookView = (w: WebhookRow): Webhook => ({
  webhook_id: w.webhook_id,
  url: w.url,
  events: w.events,
  format: w.format,
  created_by: w.created_by,
  created_at: w.created_at,
});

export function webhookRoutes(deps: WebhookRoutesDeps): Router {
  const repo = createWebhookRepo(deps.store.db);
  const router = new Router();

  router.post('/v1/webhooks', deps.idempotent, async function createWebhook(ctx) {
    const p = principalOf(ctx);
    requireAccess(p, 'identity:write', 'administrator', 'creating a webhook');
    const body = await parseBody(ctx, createWebhookBody);
    const at = new Date(deps.now()).toISOString();
    // Where audit data goes changed: the webhook and its audit event commit together (never the secret).
    const row = await atomically(deps.store.db, async (db) => {
      const created = await createWebhookRepo(db).create({ ...body, format: body.format ?? 'json', created_by: p.username, at });
      const details = { url: created.url, events: body.events, format: body.format ?? 'json' };
      await recordAudit(db, eventsOf(auditSourceOf(ctx), at, [{ event: 'webhook.created', target: { kind: 'webhook', id: created.webhook_id }, details }]));
      return created;
    });
    ok<Webhook>(ctx, webhookView(row), 201);
  });

  router.get('/v1/webhooks', async function listWebhooks(ctx) {
    const q = parseQuery(ctx, webhooksQuery);
    requireAccess(principalOf(ctx), 'identity:read', 'administrator', 'listing webhooks');
    const all = await repo.list();
    const offset = offsetOf(q);
    okList<Webhook>(ctx, all.slice(offset, offset + q.per_page).map(webhookView), q, all.length);
  });

  router.delete('/v1/webhooks/:webhookId', async function deleteWebhook(ctx) {
    requireAccess(principalOf(ctx), 'identity:write', 'administrator', 'deleting a webhook');
    const id = ctx.params.webhookId!;
    const at = new Date(deps.now()).toISOString();
    const removed = await atomically(deps.store.db, async (db) => {
      if (!(await createWebhookRepo(db).remove(id, at))) return false;
      await recordAudit(db, eventsOf(auditSourceOf(ctx), at, [{ event: 'webhook.deleted', target: { kind: 'webhook', id } }]));
      return true;
    });
    if (!removed) throw notFound(`no webhook ${id}`);
    ctx.status = 204;
  });

  router.get('/v1/webhooks/:webhookId/deliveries', async function listDeliveries(ctx) {
    const q = parseQuery(ctx, deliveriesQuery);
    requireAccess(principalOf(ctx), 'identity:read', 'administrator', 'reading webhook deliveries');
    const id = ctx.params.webhookId!;
    // A deleted webhook's log stays readable: what it was sent, and what ended `webhook deleted`.
    if (!(await repo.get(id))) throw notFound(`no webhook ${id}`);
    const { items, total } = await repo.deliveries(id, { status: q.status, limit: q.per_page, offset: offsetOf(q) });
    okList<Delivery>(ctx, items, q, total);
  });

  return router;
}
