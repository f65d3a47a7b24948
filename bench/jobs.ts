/**
 * @module Section `jobs` (issue 33, docs/jobs.md), only when named (`--only=jobs`): a server of its
 * own (SQLite, its own data dir) and thousands of light agents in a helper process (so they do not
 * share the server's CPU) that answer each job at once. A diagnostics job over all of them with no
 * pace and the largest in-flight window: time from the POST to `completed`, executions per second,
 * the server's CPU and peak RSS meanwhile. Then a paced job (120 a minute over 40 devices): the
 * observed start rate from the executions' `started_at` against the requested one. Then the first
 * job again on a server whose data dir is on tmpfs: the same work without the disk's fsyncs.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { DeviceCreated } from '../shared/api/devices';
import { JOB_LIMITS } from '../shared/api/jobs';
import { onlineInApi } from './cluster-nodes';
import { helper, type AgentsConnected, type Helper } from './helpers';
import { commitMs, executionsOf, paceOf, runJob, startTimes, turnaround, type JobRun } from './jobs-figures';
import { call, round, startServer, tempDir, type Data, type Result, type ServerProcess } from './lib';
import { waitFor } from './wait';

export interface JobsPlan {
  /** Light agents, all targeted by the unpaced job (at most JOB_LIMITS.maxDevices). */
  agents: number;
  /** Devices of the paced job (the first of the agents). */
  paced: number;
  /** Its `max_per_minute`. */
  perMinute: number;
  /** A directory for the server's `--cpu-prof` profile (written when it stops); none: no profile. */
  cpuProfDir?: string;
}

const LABEL = { bench: 'jobs' };
const MiB = 1024 * 1024;
const row = (name: string, value: number | string, unit: string, target = 'reported', met: boolean | null = null): Result => ({
  section: 'jobs',
  name,
  value,
  unit,
  target,
  met,
});

/** Registers `count` devices carrying LABEL, 32 requests at a time (the server serialises the writes anyway). */
async function register(server: ServerProcess, count: number): Promise<Array<{ id: string; token: string }>> {
  const devices: Array<{ id: string; token: string }> = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        const id = `jobs-${i}`;
        const res = await call<Data<DeviceCreated>>(`${server.url}/v1/devices`, 'POST', server.token, { device_id: id, labels: LABEL });
        if (res.status !== 201) throw new Error(`POST /v1/devices ${id} answered ${res.status}`);
        devices[i] = { id, token: res.body.data.agent_token };
      }
    }),
  );
  return devices;
}

/** The unpaced diagnostics job over every agent. */
async function fleetJob(server: ServerProcess, agents: number, where: string): Promise<Result[]> {
  const commitBefore = commitMs(200, dirname(server.dataDir));
  // Minutes for 10,000 would already be a finding; the deadline only keeps a stuck job from hanging the bench.
  const run = await runJob(
    server,
    { kind: 'diagnostics', target: { labels: LABEL }, op: 'system.info', max_per_minute: null, max_in_flight: JOB_LIMITS.maxInFlight.max },
    Math.max(120_000, agents * 60),
  );
  const execs = await executionsOf(server, run.job.job_id);
  const starts = startTimes(execs);
  const { p50, p99 } = turnaround(execs);
  const done = run.job.status === 'completed' && run.job.counts.succeeded === agents;
  const perSecond = agents / run.seconds;
  const grewMiB = (run.rssPeak - run.rssBefore) / MiB;
  return [
    row(`diagnostics job over ${agents} agents: status, succeeded${where}`, `${run.job.status}, ${run.job.counts.succeeded}`, '', `completed, ${agents}`, done),
    row(`POST /v1/jobs (job and executions written)${where}`, round(run.postMs, 0), 'ms'),
    row(`POST to first execution started${where}`, starts.length ? round((starts[0]! - run.postedAt) / 1000, 2) : 'none', 's'),
    row(`POST to job completed${where}`, round(run.seconds, 2), 's', '<= 30', done && run.seconds <= 30),
    row(`executions per second (POST to completed)${where}`, round(perSecond, 0), 'exec/s'),
    row(`execution start to result recorded, p50 / p99${where}`, `${round(p50, 0)} / ${round(p99, 0)}`, 'ms'),
    row(`server CPU during the job${where}`, round(run.cpuSeconds, 2), 'CPU s'),
    row(`server CPU per 1,000 executions${where}`, round((run.cpuSeconds / agents) * 1000, 2), 'CPU s'),
    row(
      `SQLite commit (WAL, synchronous=FULL) here, before / after the job${where}`,
      `${round(commitBefore, 2)} / ${round(commitMs(200, dirname(server.dataDir)), 2)}`,
      'ms',
    ),
    row(`server RSS before / peak during the job${where}`, `${round(run.rssBefore / MiB, 0)} / ${round(run.rssPeak / MiB, 0)}`, 'MiB'),
    row(`server RSS growth, peak during the job${where}`, round(grewMiB, 1), 'MiB', '<= 100', grewMiB <= 100),
  ];
}

/** A paced job over `devices`: the pace observed against the requested one. */
async function pacedJob(server: ServerProcess, devices: Array<{ id: string }>, perMinute: number): Promise<Result[]> {
  const ids = devices.map((d) => d.id);
  const expected = ((ids.length - 1) / perMinute) * 60;
  const run: JobRun = await runJob(
    server,
    { kind: 'diagnostics', target: { device_ids: ids }, op: 'system.info', max_per_minute: perMinute },
    expected * 1000 + 60_000,
  );
  const starts = startTimes(await executionsOf(server, run.job.job_id));
  const pace = paceOf(starts);
  const gap = 60 / perMinute;
  const near = (value: number, wanted: number) => Math.abs(value - wanted) <= wanted * 0.1;
  const what = `${ids.length} devices at ${perMinute}/min`;
  return [
    row(
      `paced job (${what}): status, succeeded`,
      `${run.job.status}, ${run.job.counts.succeeded}`,
      '',
      `completed, ${ids.length}`,
      run.job.status === 'completed' && run.job.counts.succeeded === ids.length,
    ),
    row('paced job: median gap between starts', round(pace.medianGap, 3), 's', `${gap} ± 10%`, near(pace.medianGap, gap)),
    row('paced job: shortest gap between starts', round(pace.minGap, 3), 's', `>= ${gap / 2} (no burst)`, pace.minGap >= gap / 2),
    row('paced job: starts per minute, first to last', round(pace.perMinute, 1), '/min', `${perMinute} ± 10%`, near(pace.perMinute, perMinute)),
    row(
      'paced job: most starts in any one second',
      pace.mostInOneSecond,
      'starts',
      `<= ${Math.ceil(1 / gap) + 1}`,
      pace.mostInOneSecond <= Math.ceil(1 / gap) + 1,
    ),
    row('paced job: POST to completed, beside the pace alone', `${round(run.seconds, 1)} / ${round(expected, 1)}`, 's'),
  ];
}

/**
 * A server of its own with `agents` light agents online (they register with LABEL). `tmpfs`: its
 * data dir in memory, so SQLite's fsync per commit costs nothing and the figures show the CPU alone.
 */
async function fleetOn(plan: JobsPlan, agents: number, tmpfs: boolean): Promise<Result[]> {
  const flags = plan.cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${plan.cpuProfDir}`] : [];
  let server: ServerProcess;
  if (tmpfs && existsSync('/dev/shm')) {
    // startServer makes its data dir under os.tmpdir() before its first await: /dev/shm for this call only.
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = '/dev/shm';
    try {
      server = await startServer({}, flags);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  } else {
    server = await startServer({}, flags);
  }
  let swarm: Helper | undefined;
  try {
    const t0 = performance.now();
    const devices = await register(server, agents);
    const file = join(tempDir('tether-bench-jobs-'), 'devices.json');
    writeFileSync(file, JSON.stringify(devices));
    swarm = helper(['agents', server.url, file]);
    const { open, failed } = await swarm.next<AgentsConnected>();
    // Every target must be online: an offline one waits for its agent until the job expires.
    if (open !== agents) throw new Error(`jobs: ${open} of ${agents} light agents connected (${failed} failed)`);
    await waitFor(async () => (await onlineInApi(server)) === agents, `${agents} agents online`, 120_000, 250);
    const where = tmpfs ? ' (data dir on tmpfs)' : '';
    const ready = row(`${agents} devices registered, their light agents online${where}`, round((performance.now() - t0) / 1000, 1), 's');
    // The connect burst's garbage and writes settle before the server is measured.
    await new Promise((r) => setTimeout(r, 2000));
    const fleet = await fleetJob(server, agents, where);
    const paced = tmpfs ? [] : await pacedJob(server, devices.slice(0, Math.min(plan.paced, agents)), plan.perMinute);
    return [ready, ...fleet, ...paced];
  } finally {
    await swarm?.stop();
    await server.stop();
  }
}

/** The unpaced job and the paced one with the server's data on disk (as deployed), then the unpaced one again on tmpfs. */
export async function jobsBench(plan: JobsPlan): Promise<Result[]> {
  const agents = Math.min(plan.agents, JOB_LIMITS.maxDevices);
  const results = await fleetOn(plan, agents, false);
  results.push(...(await fleetOn(plan, agents, true)));
  if (plan.cpuProfDir) console.log(`jobs: the servers' CPU profiles are in ${plan.cpuProfDir}`);
  return results;
}
