/**
 * The dispatcher's queries on a real store (both stores): an execution is claimed once, a result
 * is recorded once and only for the attempt and device it names, an undone claim leaves no trace,
 * the sweeps end what is late, a job aborts or completes once with its audit event, and the pace
 * of `startExecutions` holds across rounds.
 */
import { describe, expect, it } from 'vitest';
import { createJobRunRepo } from '../../../../api/store/job-runs';
import { createJobSweepRepo } from '../../../../api/store/job-runs-sweeps';
import { startExecutions } from '../../../../api/jobs/runtime-starts';
import { createLogger } from '../../../../shared/log';
import type { JobRunMessage } from '../../../../shared/protocol/jobs';
import { storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const log = createLogger({ level: 'error', write: () => {} });

describe('job runs', () => {
  const store = storeForEachTest();
  const runs = () => createJobRunRepo(store.db, store.dialect);
  const sweeps = () => createJobSweepRepo(store.db);

  async function job(devices: string[], over: Record<string, unknown> = {}) {
    for (const d of devices) if (!(await store.devices.get(d))) await store.devices.insert(d, `hash-${d}`, {}, iso(T0));
    return store.jobs.create(
      {
        kind: 'command',
        target: { device_ids: devices },
        spec: { argv: ['true'], timeout_seconds: 10 },
        max_per_minute: null,
        max_in_flight: 10,
        abort_failure_pct: null,
        abort_min_executed: 10,
        expires_in_seconds: 60,
        created_by: 'ann',
        created_at: iso(T0),
        trace_id: 'trace-1',
        ...over,
      } as Parameters<typeof store.jobs.create>[0],
      devices,
    );
  }
  const start = { at: iso(T0), deadlineAt: iso(T0 + 40_000), node: 'server-a' };
  const ok = {
    status: 'succeeded',
    exit_code: 0,
    output_tail: 'hi',
    result: null,
    error_code: null,
    error_message: null,
    finished_at: iso(T0 + 1000),
  } as const;

  it('claims a queued execution once, and records its result once, for its attempt and device only', async () => {
    const j = await job(['d1']);
    const [queued] = await runs().queuedOn(j.job_id, ['d1'], 10);
    const [claimed] = await runs().claim([queued!.execution_id], start);
    expect(claimed).toEqual({ execution_id: queued!.execution_id, device_id: 'd1', attempt: 1 });
    expect(await runs().claim([queued!.execution_id], start)).toEqual([]);
    expect(await runs().inFlight(j.job_id)).toBe(1);
    expect(await runs().end(claimed!.execution_id, 2, 'd1', ok)).toBeUndefined();
    expect(await runs().end(claimed!.execution_id, 1, 'd2', ok)).toBeUndefined();
    expect(await runs().end(claimed!.execution_id, 1, 'd1', ok)).toBe(j.job_id);
    expect(await runs().end(claimed!.execution_id, 1, 'd1', { ...ok, status: 'failed' })).toBeUndefined();
    const { items } = await store.jobs.executions(j.job_id, { limit: 10, offset: 0 });
    expect(items[0]).toMatchObject({ status: 'succeeded', attempt: 1, output_tail: 'hi', started_at: iso(T0) });
  });

  it('undoes a claim whose run could not be sent: queued again, attempt 0', async () => {
    const j = await job(['d1']);
    const [queued] = await runs().queuedOn(j.job_id, ['d1'], 10);
    const [claimed] = await runs().claim([queued!.execution_id], start);
    expect(await runs().unclaim(claimed!)).toBe(true);
    expect(await runs().unclaim(claimed!)).toBe(false);
    const { items } = await store.jobs.executions(j.job_id, { limit: 10, offset: 0 });
    expect(items[0]).toMatchObject({ status: 'queued', attempt: 0, started_at: null });
  });

  it('sweeps: past the deadline timed_out no_report, queued past expiry device_offline, a deleted device failed', async () => {
    const j = await job(['d1', 'd2', 'd3']);
    const queued = await runs().queuedOn(j.job_id, ['d1'], 10);
    await runs().claim(
      queued.map((q) => q.execution_id),
      start,
    );
    expect(await sweeps().pastDeadline(iso(T0 + 39_000))).toEqual([]);
    const late = await sweeps().pastDeadline(iso(T0 + 41_000));
    expect(late).toEqual([{ execution_id: queued[0]!.execution_id, device_id: 'd1', attempt: 1, job_id: j.job_id }]);
    await store.devices.delete('d3');
    expect(await sweeps().failDeleted(iso(T0 + 42_000))).toEqual([j.job_id]);
    expect(await sweeps().expireQueued(iso(T0 + 59_000))).toEqual([]);
    expect(await sweeps().expireQueued(iso(T0 + 61_000))).toEqual([j.job_id]);
    const summary = await sweeps().summary(j.job_id);
    expect(summary!.counts).toMatchObject({ timed_out: 2, failed: 1, queued: 0 });
    expect(await sweeps().idle()).toEqual([j.job_id]);
  });

  it('aborts once: queued executions canceled job_aborted, audited job.aborted', async () => {
    const j = await job(['d1', 'd2']);
    const summary = (await sweeps().summary(j.job_id))!;
    expect(await sweeps().abort(summary, '2 of 2 executions failed (100% ≥ 50%)', iso(T0 + 5000))).toBe(true);
    expect(await sweeps().abort(summary, 'again', iso(T0 + 6000))).toBe(false);
    const after = (await sweeps().summary(j.job_id))!;
    expect(after).toMatchObject({ status: 'aborted', counts: { canceled: 2, queued: 0 } });
    const audit = await store.audit.list({ job_id: j.job_id, limit: 10, offset: 0 });
    expect(audit.items.filter((e) => e.event === 'job.aborted')).toHaveLength(1);
    expect(audit.items.find((e) => e.event === 'job.aborted')).toMatchObject({ actor: 'system', reason: '2 of 2 executions failed (100% ≥ 50%)' });
  });

  it('completes once, and only with nothing queued or running left', async () => {
    const j = await job(['d1']);
    const summary = (await sweeps().summary(j.job_id))!;
    expect(await sweeps().complete(summary, iso(T0))).toBe(false);
    const [claimed] = await runs().claim([(await runs().queuedOn(j.job_id, ['d1'], 1))[0]!.execution_id], start);
    expect(await sweeps().complete(summary, iso(T0))).toBe(false);
    await runs().end(claimed!.execution_id, 1, 'd1', ok);
    expect(await sweeps().complete(summary, iso(T0 + 2000))).toBe(true);
    expect(await sweeps().complete(summary, iso(T0 + 3000))).toBe(false);
    const audit = await store.audit.list({ job_id: j.job_id, event: 'job.completed', limit: 10, offset: 0 });
    expect(audit.items).toHaveLength(1);
    expect((await sweeps().summary(j.job_id))!.status).toBe('completed');
  });

  it('starts at the pace of max_per_minute and within max_in_flight; a run that cannot be sent is undone', async () => {
    const j = await job(['d1', 'd2', 'd3', 'd4'], { max_per_minute: 60, max_in_flight: 2 });
    let now = T0;
    const sent: JobRunMessage[] = [];
    let reachable = true;
    const deps = {
      store,
      log,
      now: () => now,
      node: 'server-a',
      tickMs: 200,
      deadlineMarginSeconds: 30,
      send: (_d: string, msg: JobRunMessage) => reachable && sent.push(msg) > 0,
    };
    const ready = new Map(['d1', 'd2', 'd3', 'd4'].map((d, i) => [d, i + 1]));
    const round = async () =>
      startExecutions(
        deps,
        (await runs().startable()).find((x) => x.job_id === j.job_id)!,
        ready,
      );

    expect((await round()).started).toHaveLength(1);
    expect(sent[0]).toMatchObject({ type: 'job.run', attempt: 1, work: { kind: 'command', argv: ['true'], timeout_seconds: 10 } });
    now = T0 + 500;
    expect(await round()).toEqual({ started: [], nextAt: T0 + 1000 });
    now = T0 + 1000;
    expect((await round()).started).toHaveLength(1);
    now = T0 + 2000;
    expect((await round()).started).toHaveLength(0); // two in flight
    expect(await runs().inFlight(j.job_id)).toBe(2);

    const [running] = (await store.jobs.executions(j.job_id, { status: 'in_progress', limit: 10, offset: 0 })).items;
    await runs().end(running!.execution_id, 1, running!.device_id, ok);
    reachable = false;
    expect((await round()).started).toHaveLength(0);
    const queued = await store.jobs.executions(j.job_id, { status: 'queued', limit: 10, offset: 0 });
    expect(queued.items.map((e) => e.attempt)).toEqual([0, 0]);
  });

  it('says when it took every queued execution of the ready devices (the dispatcher then leaves the job alone)', async () => {
    const j = await job(['e1', 'e2', 'e3', 'e4'], { max_in_flight: 2 });
    const deps = { store, log, now: () => T0, node: 'server-a', tickMs: 200, deadlineMarginSeconds: 30, send: () => true };
    const round = async (ready: string[]) =>
      startExecutions(
        deps,
        (await runs().startable()).find((x) => x.job_id === j.job_id)!,
        new Map(ready.map((d, i) => [d, i + 1])),
      );
    // Room for two, one device ready: it took all there was.
    expect(await round(['e1'])).toMatchObject({ started: [{ device_id: 'e1' }], exhausted: true });
    // Room for one, three ready: the in-flight bound stopped it, more may start later.
    expect(await round(['e2', 'e3', 'e4'])).toMatchObject({ started: [{ device_id: 'e2' }], exhausted: false });
  });
});
