/**
 * @module Jobs over HTTP (CONTRACT 10.2; docs/jobs.md): creating, listing, reading and canceling
 * jobs, and paging a job's executions. What each takes and answers is `shared/api/jobs.ts`. A
 * job is seen by its creator and administrators; anyone else gets 404, so its existence never
 * leaks. Every change is published as `job.updated` after its commit (the dispatcher here and on
 * peers wakes on it, and GET /v1/events carries it to who may see the job).
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import { createJobBody, executionsQuery, jobsQuery, type Execution, type Job } from '../../shared/api/jobs';
import { requireAccess } from '../access';
import { conflict, notFound } from '../errors';
import type { EventHub } from '../events/hub';
import { principalOf } from '../http/auth';
import { ok, okList } from '../http/envelope';
import { offsetOf, parseBody, parseQuery } from '../http/validate';
import { hasRole } from '../roles';
import type { Store } from '../store/index';
import type { JobRow } from '../store/jobs';
import type { Principal } from '../store/tokens';
import { createJob } from './creating';
import { executionView, jobUpdated, jobView } from './view';

export interface JobRoutesDeps {
  store: Store;
  events: EventHub;
  /** Safe retries of creates and cancels (api/http/idempotency.ts). */
  idempotent: Middleware;
  now: () => number;
}

const isAdmin = (p: Principal) => hasRole(p.role, 'administrator');

export function jobRoutes(deps: JobRoutesDeps): Router {
  const { store, events, now } = deps;
  const router = new Router();

  /** The job if the caller may see it (its creator, administrators), else 404. */
  async function visibleJob(p: Principal, jobId: string): Promise<JobRow> {
    requireAccess(p, 'jobs:read', 'developer');
    const row = await store.jobs.get(jobId);
    if (!row || !(isAdmin(p) || row.created_by === p.username)) throw notFound(`no job ${jobId}`);
    return row;
  }

  async function view(row: JobRow): Promise<Job> {
    const counts = await store.jobs.counts([row.job_id]);
    return jobView(row, counts.get(row.job_id)!);
  }

  router.post('/v1/jobs', deps.idempotent, async function createJobRoute(ctx) {
    const body = await parseBody(ctx, createJobBody);
    const job = await createJob(store, principalOf(ctx), body, now);
    events.publish(jobUpdated(job, job.created_at));
    ok<Job>(ctx, job, 201);
  });

  router.get('/v1/jobs', async function listJobs(ctx) {
    const q = parseQuery(ctx, jobsQuery);
    const p = principalOf(ctx);
    requireAccess(p, 'jobs:read', 'developer');
    const { items, total } = await store.jobs.list({
      status: q.status,
      created_by: isAdmin(p) ? undefined : p.username,
      limit: q.per_page,
      offset: offsetOf(q),
    });
    const counts = await store.jobs.counts(items.map((j) => j.job_id));
    okList<Job>(
      ctx,
      items.map((j) => jobView(j, counts.get(j.job_id)!)),
      q,
      total,
    );
  });

  router.get('/v1/jobs/:jobId', async function getJob(ctx) {
    ok<Job>(ctx, await view(await visibleJob(principalOf(ctx), ctx.params.jobId!)));
  });

  router.post('/v1/jobs/:jobId/cancel', deps.idempotent, async function cancelJob(ctx) {
    const p = principalOf(ctx);
    requireAccess(p, 'jobs:write', 'developer');
    const row = await visibleJob(p, ctx.params.jobId!);
    const at = new Date(now()).toISOString();
    const canceled = await store.transaction(async (tx) => {
      if (!(await tx.jobs.cancel(row.job_id, at, p.username))) return false;
      await tx.audit.appendJob({
        event: 'job.canceled',
        job_id: row.job_id,
        actor: p.username,
        owner: row.created_by,
        reason: null,
        trace_id: row.trace_id,
        at,
      });
      return true;
    });
    if (!canceled) throw conflict(`job ${row.job_id} has already ended (${(await store.jobs.get(row.job_id))?.status ?? row.status})`);
    const job = await view((await store.jobs.get(row.job_id))!);
    events.publish(jobUpdated(job, at));
    ok<Job>(ctx, job);
  });

  router.get('/v1/jobs/:jobId/executions', async function listExecutions(ctx) {
    const q = parseQuery(ctx, executionsQuery);
    const row = await visibleJob(principalOf(ctx), ctx.params.jobId!);
    const { items, total } = await store.jobs.executions(row.job_id, { status: q.status, limit: q.per_page, offset: offsetOf(q) });
    okList<Execution>(ctx, items.map(executionView), q, total);
  });

  return router;
}
