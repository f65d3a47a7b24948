/**
 * @module Starting a job's executions on the agents connected here (docs/jobs.md, rollout). One
 * transaction per job and round: the job's row locked (PostgreSQL: peers take turns), its
 * executions in flight counted on every node, the pace read from `next_start_at`, the queued
 * executions of ready devices claimed (`queued` → `in_progress`, attempt + 1) and the pace moved on.
 * Then `job.run` goes to each agent; a claim whose agent left in between is undone, so it waits
 * queued for its agent as if never started.
 */
import type { Logger } from '../../shared/log';
import type { JobRunMessage } from '../../shared/protocol/jobs';
import type { Store } from '../store/index';
import { createJobRunRepo, type ClaimedAttempt, type JobRunRepo, type StartableJob } from '../store/job-runs';
import { atomically } from '../store/schema';
import { deadlineMs, workOf } from './runtime-work';

/** Devices asked about in one query (an `IN` list); more ready agents than that: a scan instead. */
const DEVICES_PER_QUERY = 500;
/** Queued executions read at a time by a scan. */
const SCAN_BATCH = 1000;

export interface StartDeps {
  store: Store;
  log: Logger;
  now: () => number;
  /** This node's run id, kept on each attempt it starts. */
  node: string;
  /** The loop's period: at most one period's worth of starts come at once after a pause, never a burst. */
  tickMs: number;
  deadlineMarginSeconds: number;
  /** Sends `job.run` to the device's ready agent connection; false if it is gone. */
  send(deviceId: string, msg: JobRunMessage): boolean;
}

export interface StartRound {
  /** The attempts started (sent). */
  started: ClaimedAttempt[];
  /** When the pace lets this job start its next execution (ms); undefined: when something else changes. */
  nextAt: number | undefined;
  /** It had room, and took every queued execution of the devices in `ready`: nothing more starts until another agent is ready. */
  exhausted?: boolean;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Up to `room` queued executions of the job whose devices are ready here. Few agents here: asked
 * for by device (`IN` lists); many: the job's queued executions scanned in order and kept when their
 * device is ready, so the cost follows what is queued, not how many agents are connected.
 */
async function pick(runs: JobRunRepo, jobId: string, ready: ReadonlyMap<string, number>, room: number) {
  const picked: Array<{ execution_id: string; seq: number }> = [];
  if (ready.size <= DEVICES_PER_QUERY) {
    picked.push(...(await runs.queuedOn(jobId, [...ready.keys()], room)));
    return picked;
  }
  const batch = Math.max(room * 2, SCAN_BATCH);
  for (let after = -1; picked.length < room;) {
    const rows = await runs.queuedAfter(jobId, after, batch);
    for (const r of rows) if (picked.length < room && ready.has(r.device_id)) picked.push(r);
    if (rows.length < batch) break;
    after = Number(rows.at(-1)!.seq);
  }
  return picked;
}

/** Starts what `job` may start now on the devices in `ready` (ready agents here, by device). */
export async function startExecutions(deps: StartDeps, job: StartableJob, ready: ReadonlyMap<string, number>): Promise<StartRound> {
  const work = workOf(job.kind, job.spec);
  if (!work) {
    deps.log.error('a job’s spec does not fit its kind; it starts nothing', { job_id: job.job_id, kind: job.kind });
    return { started: [], nextAt: undefined };
  }
  const interval = job.max_per_minute === null ? 0 : 60_000 / Number(job.max_per_minute);
  const t = deps.now();
  const due = Date.parse(job.next_start_at);
  if (interval > 0 && due > t) return { started: [], nextAt: due };
  if (ready.size === 0) return { started: [], nextAt: undefined };

  let nextAt: number | undefined;
  let exhausted = false;
  const claimed = await atomically(deps.store.db, async (tx) => {
    const runs = createJobRunRepo(tx, deps.store.dialect);
    const locked = await runs.lock(job.job_id);
    if (!locked) return [];
    const next = Date.parse(locked.next_start_at);
    if (interval > 0 && next > t) {
      nextAt = next; // a peer started one meanwhile
      return [];
    }
    let room = Number(locked.max_in_flight) - (await runs.inFlight(job.job_id));
    // The pace's slots since the last start. A start a little late keeps the schedule (the rate
    // stays the one asked for); one much later starts it anew, so a job that could start nothing
    // for a while (its devices offline) does not make up for it in a burst: no two starts closer
    // than 90 % of the interval, or, at rates above one a round, one round's worth at once.
    const base = Math.max(next, t - (interval > deps.tickMs ? interval / 10 : deps.tickMs));
    if (interval > 0) room = Math.min(room, Math.floor((t - base) / interval) + 1);
    if (room <= 0) return [];
    const picked = await pick(runs, job.job_id, ready, room);
    exhausted = picked.length < room;
    picked.sort((a, b) => Number(a.seq) - Number(b.seq));
    const started = await runs.claim(
      picked.map((p) => p.execution_id),
      { at: iso(t), deadlineAt: iso(t + deadlineMs(work, deps.deadlineMarginSeconds)), node: deps.node },
    );
    if (interval > 0 && started.length > 0) {
      nextAt = base + started.length * interval;
      await runs.paced(job.job_id, iso(nextAt));
    }
    return started;
  });

  const sent: ClaimedAttempt[] = [];
  for (const attempt of claimed) {
    const msg: JobRunMessage = { type: 'job.run', execution_id: attempt.execution_id, attempt: attempt.attempt, work };
    if (deps.send(attempt.device_id, msg)) sent.push(attempt);
    else if (!(await createJobRunRepo(deps.store.db, deps.store.dialect).unclaim(attempt))) {
      deps.log.warn('a claimed execution changed before its claim could be undone', { execution_id: attempt.execution_id });
    }
  }
  return { started: sent, nextAt, exhausted };
}
