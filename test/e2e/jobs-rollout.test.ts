/**
 * The rollout of jobs end to end (docs/jobs.md) with real agent processes: the even pace of
 * `max_per_minute` and the `max_in_flight` bound as observed from the executions, the abort rule,
 * cancel by hand, an offline device that runs once its agent comes, expiry, and `job.updated`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { listenEvents } from '../helpers/events';
import { execOnStore } from '../helpers/store';
import { waitFor } from '../helpers/wait';
import { createJob, executionsOf, executionWhen, getJob, jobEnded } from '../helpers/job-rollout';

const DEVICES = ['ro-0', 'ro-1', 'ro-2', 'ro-3', 'ro-4', 'ro-5'];
let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
  await Promise.all(DEVICES.map((d) => stack.onlineDevice(d, { TETHER_FILES_ROOT: tempDir() })));
}, 60_000);
afterAll(() => stack?.stop());

const command = (argv: string[], extra: Record<string, unknown> = {}) => ({ kind: 'command', target: { device_ids: DEVICES }, argv, ...extra });

describe('jobs rollout', () => {
  it('starts at an even pace: max_per_minute 60 is one start a second, not a burst', async () => {
    const job = await createJob(stack.admin, command(['true'], { max_per_minute: 60 }));
    const ended = await jobEnded(stack.admin, job.job_id);
    expect(ended).toMatchObject({ status: 'completed', counts: { succeeded: 6, queued: 0, in_progress: 0 } });
    const starts = (await executionsOf(stack.admin, job.job_id)).map((e) => Date.parse(e.started_at!)).sort((a, b) => a - b);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    expect(gaps).toHaveLength(5);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(900);
    // the first one started at once
    expect(starts[0]! - Date.parse(job.created_at)).toBeLessThan(2000);
  });

  it('never has more than max_in_flight executions running at once', async () => {
    const job = await createJob(stack.admin, command(['sleep', '1'], { max_per_minute: null, max_in_flight: 2 }));
    let most = 0;
    const seen = await waitFor(
      async () => {
        const j = await getJob(stack.admin, job.job_id);
        most = Math.max(most, j.counts.in_progress);
        return j.status !== 'in_progress' && j;
      },
      'the job to end',
      30_000,
      50,
    );
    expect(seen.counts.succeeded).toBe(6);
    expect(most).toBe(2);
  });

  it('aborts once the failed share reaches abort_failure_pct: what has not started is canceled, audited job.aborted', async () => {
    const job = await createJob(
      stack.admin,
      command(['sh', '-c', 'echo failing >&2; exit 3'], { max_per_minute: null, max_in_flight: 1, abort_failure_pct: 50, abort_min_executed: 2 }),
    );
    const ended = await jobEnded(stack.admin, job.job_id);
    expect(ended.status).toBe('aborted');
    expect(ended.abort_reason).toMatch(/^\d of \d executions failed \(100% ≥ 50%\)$/);
    expect(ended.counts.failed).toBeGreaterThanOrEqual(2);
    expect(ended.counts.canceled).toBeGreaterThanOrEqual(3);
    expect(ended.counts.failed + ended.counts.canceled + ended.counts.in_progress).toBe(6);
    const executions = await executionsOf(stack.admin, job.job_id);
    const failed = executions.find((e) => e.status === 'failed')!;
    expect(failed).toMatchObject({ exit_code: 3, attempt: 1 });
    expect(failed.output_tail).toContain('failing');
    for (const e of executions.filter((x) => x.status === 'canceled')) expect(e).toMatchObject({ attempt: 0, error: { code: 'job_aborted' } });
    const audit = await stack.admin.get(`/v1/audit/remote-access?job_id=${job.job_id}`);
    const aborted = audit.body.data.find((e: { event: string }) => e.event === 'job.aborted');
    expect(aborted).toMatchObject({ job_id: job.job_id, actor: 'system', reason: ended.abort_reason });
    // one that was running when it aborted still ends, and is recorded
    await waitFor(async () => (await getJob(stack.admin, job.job_id)).counts.in_progress === 0, 'the running one to end');
  });

  it('cancel by hand: the queued executions end canceled, the running one ends as it ends', async () => {
    // one start every 10 s: the first runs at once, the others wait
    const job = await createJob(stack.admin, command(['sleep', '1'], { max_per_minute: 6 }));
    await waitFor(async () => (await getJob(stack.admin, job.job_id)).counts.in_progress === 1, 'the first execution to start');
    const res = await stack.admin.post(`/v1/jobs/${job.job_id}/cancel`);
    expect(res.status).toBe(200);
    const canceled = await getJob(stack.admin, job.job_id);
    expect(canceled).toMatchObject({ status: 'canceled', counts: { canceled: 5, queued: 0 } });
    expect(canceled.finished_at).not.toBeNull();
    const first = await waitFor(
      async () => (await executionsOf(stack.admin, job.job_id)).find((e) => e.attempt === 1 && e.status !== 'in_progress'),
      'the running execution to end',
    );
    expect(first).toMatchObject({ status: 'succeeded', exit_code: 0 });
    const after = await getJob(stack.admin, job.job_id);
    expect(after).toMatchObject({ status: 'canceled', counts: { succeeded: 1, canceled: 5, queued: 0, in_progress: 0 } });
  });

  it('an offline device waits queued, and runs once its agent comes', async () => {
    const token = await stack.addDevice('ro-late');
    const job = await createJob(stack.admin, { kind: 'command', target: { device_ids: ['ro-0', 'ro-late'] }, argv: ['true'], max_per_minute: null });
    await executionWhen(stack.admin, job.job_id, 'ro-0', (e) => e.status === 'succeeded', 'to succeed');
    const waiting = await getJob(stack.admin, job.job_id);
    expect(waiting).toMatchObject({ status: 'in_progress', counts: { succeeded: 1, queued: 1 } });
    stack.startAgent('ro-late', token, { TETHER_FILES_ROOT: tempDir() });
    const ended = await jobEnded(stack.admin, job.job_id);
    expect(ended).toMatchObject({ status: 'completed', counts: { succeeded: 2 } });
    const late = (await executionsOf(stack.admin, job.job_id)).find((e) => e.device_id === 'ro-late');
    expect(late).toMatchObject({ status: 'succeeded', attempt: 1, exit_code: 0, error: null });
  });

  it('an execution still queued when the job expires ends timed_out device_offline', async () => {
    await stack.addDevice('ro-never');
    const job = await createJob(stack.admin, {
      kind: 'diagnostics',
      target: { device_ids: ['ro-1', 'ro-never'] },
      op: 'system.info',
      expires_in_seconds: 60,
    });
    const ran = await executionWhen(stack.admin, job.job_id, 'ro-1', (e) => e.status === 'succeeded', 'to succeed');
    expect(ran.result).toBeTypeOf('object');
    // The contract's shortest expiry is a minute: move it into the past instead of waiting for it.
    await execOnStore(stack.dataDir, `UPDATE jobs SET expires_at = '2000-01-01T00:00:00.000Z' WHERE job_id = '${job.job_id}'`);
    const ended = await jobEnded(stack.admin, job.job_id);
    expect(ended).toMatchObject({ status: 'completed', counts: { succeeded: 1, timed_out: 1 } });
    const expired = (await executionsOf(stack.admin, job.job_id)).find((e) => e.device_id === 'ro-never');
    expect(expired).toMatchObject({ status: 'timed_out', attempt: 0, started_at: null, error: { code: 'device_offline' } });
  });

  it('an execution of a device deleted meanwhile ends failed device_deleted', async () => {
    await stack.addDevice('ro-gone');
    const job = await createJob(stack.admin, { kind: 'command', target: { device_ids: ['ro-gone'] }, argv: ['true'] });
    expect((await stack.admin.del('/v1/devices/ro-gone')).status).toBe(200);
    const ended = await jobEnded(stack.admin, job.job_id);
    expect(ended).toMatchObject({ status: 'completed', counts: { failed: 1 } });
    const [e] = await executionsOf(stack.admin, job.job_id);
    expect(e).toMatchObject({ status: 'failed', attempt: 0, error: { code: 'device_deleted' } });
  });

  it('publishes job.updated while it runs, the last one with the final status and counts', async () => {
    const events = await listenEvents(stack.url, { authorization: `Bearer ${stack.adminToken}` });
    try {
      const job = await createJob(stack.admin, command(['true'], { max_per_minute: null, max_in_flight: 3 }));
      await jobEnded(stack.admin, job.job_id);
      const mine = () => events.events.filter((e) => e.event === 'job.updated' && e.data.job_id === job.job_id);
      const last = await waitFor(() => mine().find((e) => e.data.status === 'completed'), 'the completed event');
      expect(last.data).toMatchObject({ kind: 'command', created_by: 'admin', counts: { succeeded: 6, queued: 0, in_progress: 0 } });
      expect(mine().at(-1)).toBe(last);
      expect(mine().length).toBeGreaterThanOrEqual(2);
    } finally {
      events.close();
    }
  });
});
