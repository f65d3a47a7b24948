/**
 * @module How `tether job` shows a job to people: its progress in one line, what it targets and
 * runs, the summary of how it ended, and the table of executions that did not succeed with the
 * end of their output; and the reads of its executions page by page.
 */
import type { Execution, ExecutionStatus, Job, JobCounts } from '../../shared/api/jobs';
import type { Context } from '../context';
import { formatBytes, formatDuration, table } from '../output';

/** The largest page of executions the API gives. */
const PAGE = 1000;
/** Executions of one status the end-of-job table shows; `tether job show` has them all. */
const SHOWN = 50;
const TAIL_LINES = 5;
const LINE_CHARS = 200;

const jobUrl = (id: string) => `/v1/jobs/${encodeURIComponent(id)}`;
export const total = (c: JobCounts) => c.queued + c.in_progress + c.succeeded + c.failed + c.timed_out + c.canceled;
export const shortTime = (iso: string | null) => (iso ? iso.replace(/\.\d+Z$/, 'Z') : null);

/** The job is over: it ended and nothing of it still runs (what runs at a cancel is still recorded). */
export const isOver = (j: Pick<Job, 'status' | 'counts'>) => j.status !== 'in_progress' && j.counts.in_progress === 0;

/** `3/10 done, 1 failed, 2 running, 4 queued`: the counts as the progress line and `job list` say them. */
export function countsText(c: JobCounts): string {
  const parts = [`${c.succeeded}/${total(c)} done`, `${c.failed + c.timed_out} failed`, `${c.in_progress} running`, `${c.queued} queued`];
  if (c.canceled > 0) parts.push(`${c.canceled} canceled`);
  return parts.join(', ');
}

/**
 * The live line: counts, executions ended per minute so far, and the time since the command
 * started following. `rate` is left out until a minute's worth can be guessed (a second in).
 */
export function progressLine(j: Pick<Job, 'job_id' | 'status' | 'counts'>, seconds: number): string {
  const ended = j.counts.succeeded + j.counts.failed + j.counts.timed_out;
  const rate = seconds >= 1 ? `${((ended * 60) / seconds).toFixed(1)}/min` : '-/min';
  const state = j.status === 'in_progress' ? '' : ` (${j.status})`;
  return `${j.job_id}${state}: ${countsText(j.counts)}  ${rate}  ${formatDuration(seconds)}`;
}

export function targetText(t: Job['target']): string {
  if ('device_ids' in t) {
    const shown = t.device_ids.slice(0, 5).join(', ');
    return t.device_ids.length > 5 ? `${shown} … (${t.device_ids.length} devices)` : `device${t.device_ids.length === 1 ? '' : 's'} ${shown}`;
  }
  if ('group_id' in t) return `group ${t.group_id} in tenant ${t.tenant}`;
  return `labels ${Object.entries(t.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',')}`;
}

/** What runs on each device, from the job's spec. */
export function specText(j: Pick<Job, 'kind' | 'spec'>): string {
  const s = j.spec;
  if (j.kind === 'command') {
    const argv = (s.argv as string[] | undefined) ?? [];
    const quoted = argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
    return `${quoted} (timeout ${String(s.timeout_seconds)} s)`;
  }
  if (j.kind === 'file-push') {
    const size = typeof s.size === 'number' ? formatBytes(s.size) : '?';
    return `${String(s.blob_id)} (${size}, sha256 ${String(s.sha256).slice(0, 12)}…) to ${String(s.path)}, mode ${String(s.mode)}`;
  }
  const params = s.params && Object.keys(s.params).length > 0 ? ` ${JSON.stringify(s.params)}` : '';
  return `${String(s.op)}${params}`;
}

/** The rollout as one line: pace, in flight, the abort rule, how long offline devices are waited for. */
export function rateText(j: Job): string {
  const pace = j.max_per_minute === null ? 'no pace' : `${j.max_per_minute}/min`;
  const abort = j.abort_failure_pct === null ? 'no abort rule' : `abort at ${j.abort_failure_pct}% failed once ${j.abort_min_executed} ended`;
  return `${pace}, ${j.max_in_flight} in flight, ${abort}, offline devices waited for ${formatDuration(j.expires_in_seconds)}`;
}

/** `job_x completed in 42s: 10 of 10 succeeded` (and how the others ended; why an aborted job was). */
export function summaryLine(j: Job, seconds: number): string {
  const c = j.counts;
  const others = [
    c.failed ? `${c.failed} failed` : '',
    c.timed_out ? `${c.timed_out} timed out` : '',
    c.canceled ? `${c.canceled} canceled` : '',
    c.queued ? `${c.queued} queued` : '',
    c.in_progress ? `${c.in_progress} running` : '',
  ].filter(Boolean);
  const why = j.abort_reason ? `${j.status}: ${j.abort_reason}\n` : '';
  return `${j.job_id} ${j.status} in ${formatDuration(seconds)}: ${c.succeeded} of ${total(c)} succeeded${others.length ? `; ${others.join(', ')}` : ''}\n${why}`;
}

/** One page of a job's executions, of one status or all. */
async function executionsPage(ctx: Context, jobId: string, page: number, perPage: number, status?: ExecutionStatus): Promise<Execution[]> {
  const q = new URLSearchParams({ page: String(page), per_page: String(perPage) });
  if (status) q.set('status', status);
  return ctx.api().request<Execution[]>('GET', `${jobUrl(jobId)}/executions?${q}`);
}

/** Every execution of the job, page by page. */
export async function allExecutions(ctx: Context, jobId: string, status?: ExecutionStatus): Promise<Execution[]> {
  const all: Execution[] = [];
  for (let page = 1; ; page++) {
    const batch = await executionsPage(ctx, jobId, page, PAGE, status);
    all.push(...batch);
    if (batch.length < PAGE) return all;
  }
}

const errorText = (e: Execution, width = 100) => {
  const text = e.error ? `${e.error.code}: ${e.error.message}` : null;
  return text && text.length > width ? `${text.slice(0, width - 1)}…` : text;
};

/** The last few lines of an output tail, each cut to a readable width. */
function tailLines(tail: string): { lines: string[]; of: number } {
  const all = tail.replace(/\n$/, '').split('\n');
  const lines = all.slice(-TAIL_LINES).map((l) => (l.length > LINE_CHARS ? `${l.slice(0, LINE_CHARS - 1)}…` : l));
  return { lines, of: all.length };
}

/**
 * The executions that did not succeed (failed, timed out, canceled; at most 50 of each), with
 * their error, exit code and the end of their output. Empty when every one succeeded.
 */
export async function failureReport(ctx: Context, j: Job): Promise<string> {
  const statuses = (['failed', 'timed_out', 'canceled'] as const).filter((s) => j.counts[s] > 0);
  if (statuses.length === 0) return '';
  const rows: Execution[] = [];
  const more: string[] = [];
  for (const s of statuses) {
    rows.push(...(await executionsPage(ctx, j.job_id, 1, SHOWN, s)));
    if (j.counts[s] > SHOWN) more.push(`${j.counts[s] - SHOWN} more ${s}`);
  }
  const bad = statuses.reduce((n, s) => n + j.counts[s], 0);
  let text = `\n${bad} execution${bad === 1 ? '' : 's'} did not succeed:\n`;
  text += table(
    rows.map((e) => ({ device: e.device_id, status: e.status, exit: e.exit_code, error: errorText(e) })),
    ['device', 'status', 'exit', 'error'],
  );
  if (more.length > 0) text += `… and ${more.join(', ')}: tether job show ${j.job_id}\n`;
  for (const e of rows) {
    if (!e.output_tail) continue;
    const { lines, of } = tailLines(e.output_tail);
    const which = of > lines.length ? `last ${lines.length} of ${of} lines` : `${of} line${of === 1 ? '' : 's'}`;
    text += `\n${e.device_id} output (${which}):\n${lines.map((l) => `  ${l}\n`).join('')}`;
  }
  return text;
}

/** Every execution as a table for `tether job show`. */
export function executionsTable(executions: Execution[]): string {
  return table(
    executions.map((e) => ({
      device: e.device_id,
      status: e.status,
      attempt: e.attempt,
      exit: e.exit_code,
      started: shortTime(e.started_at),
      finished: shortTime(e.finished_at),
      error: errorText(e, 80),
    })),
    ['device', 'status', 'attempt', 'exit', 'started', 'finished', 'error'],
  );
}
