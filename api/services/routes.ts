/**
 * @module The deployment interface (docs/http-api.md, deployments): `env` on every operation. What
 * each takes and answers is `shared/api/services.ts`.
 */
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { emptyBody } from '../../shared/api/common';
import {
  applyQuery,
  deploymentAuditQuery,
  envOnly,
  historyQuery,
  logsQuery,
  rollbackQuery,
  serviceListQuery,
  weightBody,
  YAML_TYPES,
  type CanaryState,
} from '../../shared/api/services';
import { ApiError } from '../errors';
import { readRawBody } from '../http/body';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { offsetOf, parseBody, parseQuery } from '../http/validate';
import type { Services } from './services';
import type { Store } from '../store/index';
import { ok, okList } from '../http/envelope';
import { ifMatchOf, setEtag } from '../http/etag';

export function serviceRoutes(deployments: Services, store: Store, idempotent: Middleware): Router {
  const router = new Router();
  /** The ETag of the service, or of its canary state, as the answer shows it. */
  const serviceTag = (ctx: Context, view: object) => setEtag(ctx, deployments.tagsOf(view)?.service);
  const canaryTag = (ctx: Context, view: object) => setEtag(ctx, deployments.tagsOf(view)?.canary);

  router.get('/v1/services', async function listServices(ctx) {
    const q = parseQuery(ctx, serviceListQuery);
    const { items, total } = await deployments.list(principalOf(ctx), q.env, q.status, q.per_page, offsetOf(q));
    okList(ctx, items, q, total);
  });

  router.post('/v1/services', idempotent, async function applySpec(ctx) {
    const q = parseQuery(ctx, applyQuery);
    const type = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
    if (!YAML_TYPES.includes(type)) {
      throw new ApiError('unsupported_media_type', `send the service spec as ${YAML_TYPES.join(', ')}; got ${type || 'no content type'}`);
    }
    const yaml = (await readRawBody(ctx)).toString('utf8');
    const applied = await deployments.apply(principalOf(ctx), q.env, yaml, q.dry_run, ifMatchOf(ctx));
    if (!q.dry_run) serviceTag(ctx, applied);
    ok(ctx, applied);
  });

  router.get('/v1/services/:serviceName', async function getService(ctx) {
    const q = parseQuery(ctx, envOnly);
    const service = await deployments.get(principalOf(ctx), q.env, ctx.params.serviceName!);
    serviceTag(ctx, service);
    ok(ctx, service);
  });

  router.delete('/v1/services/:serviceName', async function deleteService(ctx) {
    const q = parseQuery(ctx, envOnly);
    ok(ctx, await deployments.remove(principalOf(ctx), q.env, ctx.params.serviceName!, ifMatchOf(ctx)));
  });

  router.get('/v1/services/:serviceName/revisions', async function revisionHistory(ctx) {
    const q = parseQuery(ctx, historyQuery);
    const { items, total } = await deployments.history(principalOf(ctx), q.env, ctx.params.serviceName!, q.per_page, offsetOf(q));
    okList(ctx, items, q, total);
  });

  router.get('/v1/services/:serviceName/logs', async function serviceLogs(ctx) {
    const q = parseQuery(ctx, logsQuery);
    ok(ctx, await deployments.logs(principalOf(ctx), q.env, ctx.params.serviceName!, q.lines));
  });

  router.post('/v1/services/:serviceName/rollback', async function rollback(ctx) {
    const q = parseQuery(ctx, rollbackQuery);
    await parseBody(ctx, emptyBody);
    const service = await deployments.rollback(principalOf(ctx), q.env, ctx.params.serviceName!, q.revision, ifMatchOf(ctx));
    serviceTag(ctx, service);
    ok(ctx, service);
  });

  router.get('/v1/services/:serviceName/canary', async function getCanary(ctx) {
    const q = parseQuery(ctx, envOnly);
    const canary = await deployments.canary(principalOf(ctx), q.env, ctx.params.serviceName!);
    canaryTag(ctx, canary);
    ok<CanaryState>(ctx, canary);
  });

  router.put('/v1/services/:serviceName/canary/weight', async function setCanaryWeight(ctx) {
    const q = parseQuery(ctx, envOnly);
    const body = await parseBody(ctx, weightBody);
    const canary = await deployments.setWeight(principalOf(ctx), q.env, ctx.params.serviceName!, body.weight, ifMatchOf(ctx));
    canaryTag(ctx, canary);
    ok<CanaryState>(ctx, canary);
  });

  router.post('/v1/services/:serviceName/canary/halt', async function haltCanary(ctx) {
    const q = parseQuery(ctx, envOnly);
    const canary = await deployments.halt(principalOf(ctx), q.env, ctx.params.serviceName!, ifMatchOf(ctx));
    canaryTag(ctx, canary);
    ok<CanaryState>(ctx, canary);
  });

  router.post('/v1/services/:serviceName/canary/promote', async function promoteCanary(ctx) {
    const q = parseQuery(ctx, envOnly);
    const service = await deployments.promote(principalOf(ctx), q.env, ctx.params.serviceName!, ifMatchOf(ctx));
    serviceTag(ctx, service);
    ok(ctx, service);
  });

  router.get('/v1/audit/deployments', async function listDeploymentAudit(ctx) {
    const q = parseQuery(ctx, deploymentAuditQuery);
    requireAccess(principalOf(ctx), 'deployments:read', 'administrator', 'reading the deployment audit');
    const { items, total } = await store.services.auditList({
      service: q.service,
      environment: q.env,
      event: q.event,
      actor: q.actor,
      since: q.since,
      limit: q.per_page,
      offset: offsetOf(q),
    });
    okList(ctx, items, q, total);
  });

  return router;
}
