/**
 * @module `tether job run | diag | push | list | show | cancel`: one operation across many
 * devices (docs/jobs.md, CONTRACT 10.2). `run`, `diag` and `push` create the job and follow it
 * until it is over, then say how it ended and which executions did not succeed, with the end of
 * their output; they exit 0 only when every execution succeeded, 1 otherwise, 130 on Ctrl-C
 * (which leaves the job running). `--detach` returns with the job's id at once.
 */
import { allPages } from '../api-client';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { JOB_LIMITS, type CreateJobBody, type Execution, type Job } from '../../shared/api/jobs';
import type { DiagnosticResults } from '../../shared/protocol/diagnostics';
import type { Context } from '../context';
import { describe } from '../describe';
import { checkDiagArgs } from '../diag-ops';
import { CliError, usageError } from '../errors';
import { formatBytes, printJson, table } from '../output';
import { describe as describeResults } from './diag';
import { checkDevicePath, checkMode, checkTarget, rateOf, targetOf, wholeNumber, type RateFlags, type TargetFlags } from './job-args';
import { followJob } from './job-follow';
import { uploadBlob } from './job-http';
import * as report from './job-report';

export interface CreateFlags extends TargetFlags, RateFlags {
  detach?: boolean;
  json?: boolean;
}

const jobUrl = (id: string) => `/v1/jobs/${encodeURIComponent(id)}`;
/** Results of diagnostics the end of `job diag` prints; more are in `tether job show ID --json`. */
const RESULTS_SHOWN = 100;

/** `tether job run TARGET [RATE] [--timeout S] -- ARGV...`; `dashDash`: the command line had the `--`. */
export async function jobRun(ctx: Context, argv: string[], flags: CreateFlags & { timeout?: string }, dashDash: boolean): Promise<number> {
  const how = 'tether job run TARGET [RATE] -- ARGV...';
  if (!dashDash) throw usageError(`put the command after --: ${how}`);
  if (argv.length === 0) throw usageError(`nothing to run after --: ${how}`);
  if (argv.length > JOB_LIMITS.maxArgv) throw usageError(`a command has at most ${JOB_LIMITS.maxArgv} arguments, not ${argv.length}`);
  checkTarget(flags);
  const rate = rateOf(flags);
  const timeout = flags.timeout === undefined ? undefined : wholeNumber('--timeout', flags.timeout, JOB_LIMITS.timeoutSeconds);
  const target = await targetOf(ctx, flags);
  return createAndFollow(ctx, { kind: 'command', target, argv, ...(timeout === undefined ? {} : { timeout_seconds: timeout }), ...rate }, flags);
}

export interface DiagParamFlags {
  path?: string;
  lines?: number;
  limit?: number;
}

/** `tether job diag TARGET OP [--path P] [--lines N] [--limit N]`: the op's options as `tether diag` takes them. */
export async function jobDiag(ctx: Context, op: string, flags: CreateFlags & DiagParamFlags): Promise<number> {
  checkDiagArgs(op, { path: flags.path, lines: flags.lines, limit: flags.limit });
  checkTarget(flags);
  const rate = rateOf(flags);
  const params: Record<string, unknown> = {};
  if (flags.path !== undefined) params.path = flags.path;
  if (flags.lines !== undefined) params.lines = flags.lines;
  if (flags.limit !== undefined) params.limit = flags.limit;
  const target = await targetOf(ctx, flags);
  const body = { kind: 'diagnostics', target, op, ...(Object.keys(params).length > 0 ? { params } : {}), ...rate } as CreateJobBody;
  return createAndFollow(ctx, body, flags);
}

/** `tether job push TARGET FILE PATH [--mode M]`: FILE uploaded once (`POST /v1/blobs`), then written on each device. */
export async function jobPush(ctx: Context, file: string, path: string, flags: CreateFlags & { mode?: string }): Promise<number> {
  checkTarget(flags);
  const rate = rateOf(flags);
  checkDevicePath(path);
  if (flags.mode !== undefined) checkMode(flags.mode);
  const local = resolve(file);
  const s = await stat(local).catch(() => undefined);
  if (!s?.isFile()) throw new CliError(`${file} is not a file${s ? '' : ' (it does not exist)'}`, 'local_file');
  if (s.size > JOB_LIMITS.maxBlobBytes)
    throw new CliError(`${file} is ${formatBytes(s.size)}; a pushed file is at most ${formatBytes(JOB_LIMITS.maxBlobBytes)}`, 'local_file');
  const target = await targetOf(ctx, flags);
  const blob = await uploadBlob(ctx, local, s.size);
  ctx.notice(`uploaded ${file} as ${blob.blob_id} (${formatBytes(blob.size)}, sha256 ${blob.sha256})`);
  return createAndFollow(ctx, { kind: 'file-push', target, blob_id: blob.blob_id, path, ...(flags.mode ? { mode: flags.mode } : {}), ...rate }, flags);
}

/** Creates the job; unless detached, follows it and reports how it ended. The exit code. */
async function createAndFollow(ctx: Context, body: CreateJobBody, flags: CreateFlags): Promise<number> {
  const created = await ctx.api().request<Job>('POST', '/v1/jobs', body);
  const id = created.job_id;
  if (flags.detach) {
    if (flags.json) printJson(ctx.out, created);
    else ctx.out.stdout(`${id}\n`);
    return 0;
  }
  const n = report.total(created.counts);
  ctx.notice(`${id}: ${created.kind} ${report.specText(created)} on ${n} device${n === 1 ? '' : 's'}`);
  const followed = await followJob(ctx, created, process.stderr.isTTY === true);
  const { job } = followed;
  if (followed.interrupted) {
    ctx.notice(`stopped following ${id}; the job goes on (tether job show ${id}). To stop it: tether job cancel ${id}`);
    return 130;
  }
  if (flags.json) {
    printJson(ctx.out, { job, executions: await report.allExecutions(ctx, id) });
  } else {
    ctx.out.stdout(report.summaryLine(job, followed.seconds));
    if (job.kind === 'diagnostics') ctx.out.stdout(await diagResults(ctx, job));
    ctx.out.stdout(await report.failureReport(ctx, job));
  }
  return job.counts.succeeded === report.total(job.counts) ? 0 : 1;
}

/** Each device's diagnostics result, readable as `tether diag` prints it (the first 100 devices). */
async function diagResults(ctx: Context, job: Job): Promise<string> {
  if (job.counts.succeeded === 0) return '';
  const q = new URLSearchParams({ status: 'succeeded', per_page: String(RESULTS_SHOWN) });
  const done = await ctx.api().request<Execution[]>('GET', `${jobUrl(job.job_id)}/executions?${q}`);
  const op = String(job.spec.op) as keyof DiagnosticResults;
  let text = '';
  for (const e of done) {
    // Read as this version's agent answers (not checked): printing only reads the fields.
    const body = describeResults({ [op]: e.result } as Partial<DiagnosticResults>);
    text += `\n${e.device_id}:\n${body.replace(/\n$/, '').replace(/^/gm, '  ')}\n`;
  }
  if (job.counts.succeeded > done.length) text += `\n… and ${job.counts.succeeded - done.length} more: tether job show ${job.job_id} --json\n`;
  return text;
}

export async function jobList(ctx: Context, flags: { status?: string; json?: boolean }): Promise<void> {
  const status: Record<string, string> = flags.status ? { status: flags.status } : {};
  const jobs = await allPages<Job>(ctx.api(), (paging) => `/v1/jobs?${new URLSearchParams({ ...paging, ...status })}`);
  if (flags.json) return printJson(ctx.out, jobs);
  if (jobs.length === 0) return ctx.out.stdout(flags.status ? `no ${flags.status} jobs\n` : 'no jobs\n');
  const rows = jobs.map((j) => ({
    job: j.job_id,
    kind: j.kind,
    status: j.status,
    progress: report.countsText(j.counts),
    target: report.targetText(j.target),
    created: report.shortTime(j.created_at),
    by: j.created_by,
  }));
  ctx.out.stdout(table(rows, ['job', 'kind', 'status', 'progress', 'target', 'created', 'by']));
}

export async function jobShow(ctx: Context, id: string, flags: { json?: boolean }): Promise<void> {
  const job = await ctx.api().request<Job>('GET', jobUrl(id));
  const executions = await report.allExecutions(ctx, id);
  if (flags.json) return printJson(ctx.out, { job, executions });
  ctx.out.stdout(
    describe([
      ['job', job.job_id],
      ['kind', job.kind],
      ['status', job.abort_reason ? `${job.status}: ${job.abort_reason}` : job.status],
      ['runs', report.specText(job)],
      ['target', report.targetText(job.target)],
      ['rollout', report.rateText(job)],
      ['progress', report.countsText(job.counts)],
      ['created', `${report.shortTime(job.created_at)} by ${job.created_by}`],
      ['finished', report.shortTime(job.finished_at)],
    ]),
  );
  ctx.out.stdout(`\n${report.executionsTable(executions)}`);
}

export async function jobCancel(ctx: Context, id: string, flags: { json?: boolean }): Promise<void> {
  const job = await ctx.api().request<Job>('POST', `${jobUrl(id)}/cancel`, {});
  if (flags.json) return printJson(ctx.out, job);
  const running = job.counts.in_progress;
  const still = running > 0 ? `; ${running} running execution${running === 1 ? '' : 's'} run to their end and are recorded` : '';
  ctx.out.stdout(`canceled ${job.job_id}: ${job.counts.canceled} execution${job.counts.canceled === 1 ? '' : 's'} canceled${still}\n`);
}
