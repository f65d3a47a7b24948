/**
 * @module One job (`#/jobs/ID`): what runs where, its pace and abort rule, its status (and why it
 * was aborted), a live progress bar, Cancel while it runs (once confirmed), and its executions
 * (./executions.ts). The counts follow the event stream as they come; the job and its executions
 * are refetched at most once a second.
 */
import type { Job } from '../../../../shared/api/jobs';
import { api, ApiError } from '../../api';
import { confirmInline, errorBox, h, replace } from '../../dom';
import { timeElement } from '../../format';
import type { Cleanup } from '../../page';
import { executionsView } from './executions';
import { followJobs } from './live';
import { progress, statusBadge } from './view';
import { specText, targetText } from './words';

/** Seconds in the largest whole unit: `86400` → `1 d`, `90` → `90 s`. */
function duration(seconds: number): string {
  for (const [unit, size] of [
    ['d', 86400],
    ['h', 3600],
    ['min', 60],
  ] as const) {
    if (seconds >= size && seconds % size === 0) return `${seconds / size} ${unit}`;
  }
  return `${seconds} s`;
}

/** What runs, in detail: the spec's fields as the job was created (defaults filled in). */
function specFacts(job: Job): Array<[string, Node | string]> {
  const s = job.spec;
  switch (job.kind) {
    case 'diagnostics':
      return [
        ['Op', h('code', {}, String(s.op))],
        ['Params', s.params && Object.keys(s.params).length > 0 ? h('code', {}, JSON.stringify(s.params)) : 'none'],
      ];
    case 'command':
      return [
        ['Command', h('code', { id: 'job-argv' }, specText(job))],
        ['Timeout', typeof s.timeout_seconds === 'number' ? duration(s.timeout_seconds) : '—'],
      ];
    case 'file-push':
      return [
        ['Path', h('code', {}, String(s.path))],
        ['Mode', String(s.mode ?? '0644')],
        ['Blob', h('code', {}, String(s.blob_id))],
        ['Size and SHA-256', `${String(s.size)} bytes, ${String(s.sha256)}`],
      ];
  }
}

function facts(job: Job): HTMLElement {
  const rows: Array<[string, Node | string]> = [
    ['Kind', job.kind],
    ...specFacts(job),
    ['Target', targetText(job.target)],
    [
      'Pace',
      `${job.max_per_minute === null ? 'no limit per minute' : `at most ${job.max_per_minute} started a minute, evenly`}, at most ${job.max_in_flight} running at once`,
    ],
    [
      'Abort rule',
      job.abort_failure_pct === null ? 'none' : `abort once at least ${job.abort_min_executed} ended and the failed share reaches ${job.abort_failure_pct}%`,
    ],
    ['Offline devices', `wait up to ${duration(job.expires_in_seconds)}`],
    ['Created by', job.created_by],
    ['Created', timeElement(job.created_at)],
    ['Finished', job.finished_at ? timeElement(job.finished_at) : h('span', { class: 'muted' }, 'not yet')],
  ];
  if (job.abort_reason) rows.push(['Abort reason', h('span', { id: 'job-abort-reason' }, job.abort_reason)]);
  return h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export async function jobPage(root: HTMLElement, [jobId]: string[]): Promise<Cleanup | void> {
  const path = `/v1/jobs/${encodeURIComponent(jobId!)}`;
  let job: Job;
  try {
    job = await api<Job>('GET', path);
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) {
      return void replace(root, h('h1', {}, 'Job'), errorBox(`No job ${jobId} that you may see: it does not exist, or it is someone else's.`));
    }
    throw err;
  }
  const badge = h('span', { id: 'job-status' });
  const bar = h('div', { id: 'job-progress' });
  const about = h('section', { id: 'job-facts' });
  const panel = h('div', { id: 'job-panel', role: 'status' });
  const problem = h('div');
  const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel-job', onclick: () => void cancelJob() }, 'Cancel job…');
  const executions = executionsView(jobId!);

  /** Shows the job's status and counts; Cancel only while it runs. */
  function show(j: Pick<Job, 'status' | 'counts'>): void {
    replace(badge, statusBadge(j.status));
    replace(bar, progress(j.counts));
    cancel.hidden = j.status !== 'in_progress';
  }
  function showJob(j: Job): void {
    job = j;
    show(j);
    replace(about, facts(j));
  }

  async function refetch(): Promise<void> {
    try {
      const [j] = await Promise.all([api<Job>('GET', path), executions.refresh()]);
      showJob(j);
      replace(problem);
    } catch (err) {
      replace(problem, errorBox((err as Error).message));
    }
  }

  async function cancelJob(): Promise<void> {
    const queued = job.counts.queued;
    const question = `Cancel ${job.job_id}? ${queued} queued ${queued === 1 ? 'execution ends' : 'executions end'} canceled; those running finish and are recorded.`;
    if (!(await confirmInline(panel, question, 'Cancel job'))) return;
    try {
      await api('POST', `${path}/cancel`);
      replace(panel, h('p', { class: 'muted' }, `${job.job_id} is canceled.`));
    } catch (err) {
      replace(panel, errorBox((err as Error).message));
    }
    await refetch();
  }

  replace(
    root,
    h('h1', {}, 'Job ', h('code', {}, job.job_id), ' ', badge),
    problem,
    bar,
    h('div', { class: 'actions' }, cancel),
    panel,
    about,
    executions.root,
  );
  showJob(job);
  await executions.refresh();

  const follow = followJobs({
    wanted: (e) => e.job_id === job.job_id,
    // The event carries the counts: the bar moves at once, the rows follow with the refetch.
    seen: (e) => show(e),
    refetch,
    active: () => job.status === 'in_progress' || job.counts.in_progress > 0,
  });
  return follow.stop;
}
