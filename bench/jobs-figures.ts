/**
 * @module Section `jobs`, the reading side: one job followed from its POST to its end (wall time,
 * the server's CPU and peak RSS meanwhile, sampled from /proc), its executions read back page by
 * page, what their start times say about the pace, and what one SQLite commit costs on the disk
 * the server writes to (the other sessions on a shared machine change it from minute to minute).
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Execution, Job } from '../shared/api/jobs';
import { call, median, percentile, processStats, type Data, type Page, type ServerProcess } from './lib';

/** A job from its POST to its end, as the server process lived it. */
export interface JobRun {
  job: Job;
  /** Milliseconds the POST took (the job and its executions written in one transaction). */
  postMs: number;
  /** Seconds from sending the POST to the job's `finished_at`; NaN when it had not ended by the deadline. */
  seconds: number;
  cpuSeconds: number;
  rssBefore: number;
  rssPeak: number;
  rssAfter: number;
  /** Wall clock (ms) when the POST was sent, to set the executions' times against. */
  postedAt: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A GET, once more after a reset: a keep-alive connection the server closed as it went idle
 * (5 s) can be reused in that very moment, and a GET may be repeated.
 */
async function get<B>(url: string, token: string): Promise<{ status: number; body: B }> {
  for (let tries = 1; ; tries++) {
    try {
      return await call<B>(url, 'GET', token);
    } catch (err) {
      if (tries >= 3 || (err as NodeJS.ErrnoException).code !== 'ECONNRESET') throw err;
    }
  }
}

/** POSTs `body` and follows the job until it ends or `timeoutMs` passes (then it is returned as it was). */
export async function runJob(server: ServerProcess, body: object, timeoutMs: number): Promise<JobRun> {
  const before = processStats(server.pid);
  let peak = before.rss;
  // RSS every 50 ms: the peak, not what is left once it is over.
  const sampler = setInterval(() => {
    try {
      peak = Math.max(peak, processStats(server.pid).rss);
    } catch {
      // the server is gone: the run fails below
    }
  }, 50);
  try {
    const postedAt = Date.now();
    const t0 = performance.now();
    const created = await call<Data<Job>>(`${server.url}/v1/jobs`, 'POST', server.token, body);
    const postMs = performance.now() - t0;
    if (created.status !== 201) throw new Error(`POST /v1/jobs answered ${created.status}: ${JSON.stringify(created.body).slice(0, 500)}`);
    let job = created.body.data;
    const deadline = Date.now() + timeoutMs;
    let said = Date.now();
    // Polled every 100 ms; the figure itself comes from the job's finished_at, not from the poll.
    while (job.status === 'in_progress' && Date.now() < deadline) {
      await sleep(100);
      const got = await get<Data<Job>>(`${server.url}/v1/jobs/${job.job_id}`, server.token);
      if (got.status !== 200) throw new Error(`GET /v1/jobs/${job.job_id} answered ${got.status}`);
      job = got.body.data;
      if (Date.now() - said >= 10_000) {
        said = Date.now();
        const { queued, in_progress, succeeded } = job.counts;
        console.error(`jobs: ${job.job_id} after ${Math.round((said - postedAt) / 1000)} s: ${succeeded} succeeded, ${in_progress} running, ${queued} queued`);
      }
    }
    const after = processStats(server.pid);
    const seconds = job.finished_at ? (Date.parse(job.finished_at) - postedAt) / 1000 : NaN;
    return {
      job,
      postMs,
      seconds,
      cpuSeconds: after.cpuSeconds - before.cpuSeconds,
      rssBefore: before.rss,
      rssPeak: Math.max(peak, after.rss),
      rssAfter: after.rss,
      postedAt,
    };
  } finally {
    clearInterval(sampler);
  }
}

/** Every execution of a job, 1,000 a page. */
export async function executionsOf(server: ServerProcess, jobId: string): Promise<Execution[]> {
  const all: Execution[] = [];
  for (let page = 1; ; page++) {
    const got = await get<Page<Execution>>(`${server.url}/v1/jobs/${jobId}/executions?per_page=1000&page=${page}`, server.token);
    if (got.status !== 200) throw new Error(`GET executions of ${jobId} answered ${got.status}`);
    all.push(...got.body.data);
    if (got.body.data.length === 0 || all.length >= got.body.meta.total) return all;
  }
}

/** Milliseconds since the epoch of each execution's start, in order (those never started left out). */
export function startTimes(execs: Execution[]): number[] {
  return execs
    .filter((e) => e.started_at)
    .map((e) => Date.parse(e.started_at!))
    .sort((a, b) => a - b);
}

/** What the start times say about a pace: median and shortest gap (s), starts per minute, the most in any one second. */
export function paceOf(starts: number[]): { medianGap: number; minGap: number; perMinute: number; mostInOneSecond: number } {
  const gaps = starts.slice(1).map((t, i) => (t - starts[i]!) / 1000);
  let most = 0;
  for (let i = 0, j = 0; i < starts.length; i++) {
    while (starts[i]! - starts[j]! >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  const span = (starts.at(-1)! - starts[0]!) / 1000;
  return { medianGap: median(gaps), minGap: Math.min(...gaps), perMinute: span > 0 ? ((starts.length - 1) / span) * 60 : NaN, mostInOneSecond: most };
}

/** Per execution, ms from its start to its end as the server recorded them: p50 and p99. */
export function turnaround(execs: Execution[]): { p50: number; p99: number } {
  const ms = execs
    .filter((e) => e.started_at && e.finished_at)
    .map((e) => Date.parse(e.finished_at!) - Date.parse(e.started_at!))
    .sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) };
}

/**
 * Mean milliseconds of one SQLite commit as the server makes them (WAL, synchronous=FULL: an
 * fsync each) in a fresh directory under `parent` (where the server's data dir is), removed after.
 */
export function commitMs(commits: number, parent: string): number {
  const dir = mkdtempSync(join(parent, 'tether-bench-commit-'));
  const db = new Database(join(dir, 'commit.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const t0 = performance.now();
    for (let i = 0; i < commits; i++) insert.run('x');
    return (performance.now() - t0) / commits;
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
