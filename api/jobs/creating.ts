/**
 * @module Creating a job (CONTRACT 10.2): the checks in the documented order (403 role and scope
 * for its kind, 404/403 of a group target, 422 a target with no device or a blob that is not
 * there), the spec with its defaults, then the job, its executions and its audit event
 * `job.created` in one transaction. The caller publishes `job.updated` after the commit.
 */
import { newTraceId } from '../../shared/ids';
import { JOB_KIND_ROLE, JOB_LIMITS, type CreateJobBody, type Job } from '../../shared/api/jobs';
import { requireAccess } from '../access';
import { ApiError } from '../errors';
import type { Store } from '../store/index';
import { zeroCounts, type NewJob } from '../store/jobs';
import type { Principal } from '../store/tokens';
import { resolveTarget } from './targets';
import { jobView } from './view';

/** What runs on each device, defaults filled in (a file-push names its blob's size and digest). */
async function specOf(store: Store, body: CreateJobBody): Promise<Record<string, unknown>> {
  switch (body.kind) {
    case 'diagnostics':
      return { op: body.op, params: body.params ?? {} };
    case 'command':
      return { argv: body.argv, timeout_seconds: body.timeout_seconds ?? JOB_LIMITS.timeoutSeconds.default };
    case 'file-push': {
      const blob = await store.blobs.get(body.blob_id);
      if (!blob) {
        throw new ApiError('unprocessable_entity', `no blob ${body.blob_id}: upload the file first (POST /v1/blobs)`, [
          { path: 'blob_id', message: `no blob ${body.blob_id}` },
        ]);
      }
      // Always four digits, so the agent reads one form.
      const mode = (body.mode ?? '0644').padStart(4, '0');
      return { blob_id: blob.blob_id, path: body.path, mode, size: blob.size, sha256: blob.sha256 };
    }
  }
}

/** Checks, resolves and stores a new job; answers it as created (every execution queued). */
export async function createJob(store: Store, p: Principal, body: CreateJobBody, now: () => number): Promise<Job> {
  requireAccess(p, 'jobs:write', JOB_KIND_ROLE[body.kind], `a ${body.kind} job`);
  const devices = await resolveTarget(store, p, body.target);
  const spec = await specOf(store, body);
  const created_at = new Date(now()).toISOString();
  const job: NewJob = {
    kind: body.kind,
    target: body.target,
    spec,
    max_per_minute: body.max_per_minute === undefined ? JOB_LIMITS.maxPerMinute.default : body.max_per_minute,
    max_in_flight: body.max_in_flight ?? JOB_LIMITS.maxInFlight.default,
    abort_failure_pct: body.abort_failure_pct ?? null,
    abort_min_executed: body.abort_min_executed ?? JOB_LIMITS.abortMinExecuted.default,
    expires_in_seconds: body.expires_in_seconds ?? JOB_LIMITS.expiresInSeconds.default,
    created_by: p.username,
    created_at,
    trace_id: newTraceId(),
  };
  const row = await store.transaction(async (tx) => {
    const created = await tx.jobs.create(job, devices);
    await tx.audit.appendJob({
      event: 'job.created',
      job_id: created.job_id,
      actor: p.username,
      owner: p.username,
      reason: null,
      trace_id: created.trace_id,
      at: created_at,
    });
    return created;
  });
  return jobView(row, { ...zeroCounts(), queued: devices.length });
}
