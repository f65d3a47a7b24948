/** @module The deployment interface (docs/http-api.md, deployments): `env` on every operation. */
import Router from '@koa/router';
import { z } from 'zod';
import { ApiError } from '../errors';
import { readRawBody } from '../http/body';
import { requireAccess } from '../access';
import { principalOf } from '../http/auth';
import { dateTimeParam, offsetOf, pagingParams, parseBody, parseQuery } from '../http/validate';
import type { Deployments } from './deployments';
import type { Store } from '../store/index';
import { ok, okList } from '../http/envelope';

const env = z.enum(['dev', 'staging', 'prod'], {
  error: (issue) => (issue.input === undefined ? 'is required: dev, staging or prod' : 'must be dev, staging or prod'),
});
const envOnly = z.strictObject({ env });
const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

const applyQuery = z.strictObject({
  env,
  dry_run: z.enum(['true', 'false'], { error: 'must be true or false' }).default('false').transform((v) => v === 'true'),
});
const listQuery = z.strictObject({
  env,
  status: z.enum(['healthy', 'degraded', 'failed', 'deploying']).optional(),
  ...pagingParams(200, 50),
});
const historyQuery = z.strictObject({ env, ...pagingParams(100, 20) });
const rollbackQuery = z.strictObject({ env, revision: z.string().regex(/^v\d+\.\d+\.\d+$/, 'must be a revision like v1.4.2').optional() });
const emptyBody = z.strictObject({});
const weightBody = z.strictObject({ weight: z.number().int('must be a whole number').min(0).max(100) });
const auditQuery = z.strictObject({
  ...pagingParams(200, 50),
  service: z.string().min(1).max(63).optional(),
  env: env.optional(),
  event: z.string().min(1).max(64).optional(),
  actor: z.string().min(1).max(254).optional(),
  since: dateTimeParam.optional(),
});

export function serviceRoutes(deployments: Deployments, store: Store): Router {
  const router = new Router();

  router.get('/v1/services', function listServices(ctx) {
    const q = parseQuery(ctx, listQuery);
    const { items, total } = deployments.list(principalOf(ctx), q.env, q.status, q.per_page, offsetOf(q));
    okList(ctx, items, q, total);
  });

  router.post('/v1/services', async function applySpec(ctx) {
    const q = parseQuery(ctx, applyQuery);
    const type = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase();
    if (!YAML_TYPES.includes(type)) {
      throw new ApiError('unsupported_media_type', `send the service spec as ${YAML_TYPES.join(', ')}; got ${type || 'no content type'}`);
    }
    const yaml = (await readRawBody(ctx)).toString('utf8');
    ok(ctx, deployments.apply(principalOf(ctx), q.env, yaml, q.dry_run));
  });

  router.get('/v1/services/:serviceName', function getService(ctx) {
    const q = parseQuery(ctx, envOnly);
    ok(ctx, deployments.get(principalOf(ctx), q.env, ctx.params.serviceName!));
  });

  router.delete('/v1/services/:serviceName', function deleteService(ctx) {
    const q = parseQuery(ctx, envOnly);
    ok(ctx, deployments.remove(principalOf(ctx), q.env, ctx.params.serviceName!));
  });

  router.get('/v1/services/:serviceName/revisions', function revisionHistory(ctx) {
    const q = parseQuery(ctx, historyQuery);
    const { items, total } = deployments.history(principalOf(ctx), q.env, ctx.params.serviceName!, q.per_page, offsetOf(q));
    okList(ctx, items, q, total);
  });

  router.post('/v1/services/:serviceName/rollback', async function rollback(ctx) {
    const q = parseQuery(ctx, rollbackQuery);
    await parseBody(ctx, emptyBody);
    ok(ctx, deployments.rollback(principalOf(ctx), q.env, ctx.params.serviceName!, q.revision));
  });

  router.get('/v1/services/:serviceName/canary', function getCanary(ctx) {
    const q = parseQuery(ctx, envOnly);
    ok(ctx, deployments.canary(principalOf(ctx), q.env, ctx.params.serviceName!));
  });

  router.put('/v1/services/:serviceName/canary/weight', async function setCanaryWeight(ctx) {
    const q = parseQuery(ctx, envOnly);
    const body = await parseBody(ctx, weightBody);
    ok(ctx, deployments.setWeight(principalOf(ctx), q.env, ctx.params.serviceName!, body.weight));
  });

  router.post('/v1/services/:serviceName/canary/halt', function haltCanary(ctx) {
    const q = parseQuery(ctx, envOnly);
    ok(ctx, deployments.halt(principalOf(ctx), q.env, ctx.params.serviceName!));
  });

  router.post('/v1/services/:serviceName/canary/promote', function promoteCanary(ctx) {
    const q = parseQuery(ctx, envOnly);
    ok(ctx, deployments.promote(principalOf(ctx), q.env, ctx.params.serviceName!));
  });

  router.get('/v1/audit/deployments', function listDeploymentAudit(ctx) {
    const q = parseQuery(ctx, auditQuery);
    requireAccess(principalOf(ctx), 'deployments:read', 'administrator', 'reading the deployment audit');
    const { items, total } = store.services.auditList({
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
