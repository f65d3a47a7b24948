/**
 * @module The jobs pages in words, without the DOM: statuses in order, counts as a sentence, what
 * runs and where, and the new-job form's target field read into a target.
 */
import type { ExecutionStatus, Job, JobCounts, JobStatus, JobTarget } from '../../../../shared/api/jobs';

/** Every execution status, in the order the bar and the filter show them (a type check keeps it whole). */
export const EXECUTION_STATUS_ORDER = Object.keys({
  succeeded: true,
  failed: true,
  timed_out: true,
  canceled: true,
  in_progress: true,
  queued: true,
} satisfies Record<ExecutionStatus, true>) as ExecutionStatus[];

/** Every job status, for the list's filter. */
export const JOB_STATUS_ORDER = Object.keys({ in_progress: true, completed: true, canceled: true, aborted: true } satisfies Record<
  JobStatus,
  true
>) as JobStatus[];

/** `timed_out` → `timed out`: statuses as words. */
export const words = (status: string) => status.replace(/_/g, ' ');

/** How many executions the job has in all. */
export const totalOf = (c: JobCounts) => EXECUTION_STATUS_ORDER.reduce((sum, s) => sum + c[s], 0);

/** How many executions ended (any way). */
export const endedOf = (c: JobCounts) => c.succeeded + c.failed + c.timed_out + c.canceled;

/** "4 of 10 ended: 3 succeeded, 1 failed · 2 running, 4 queued": the counts that are not zero. */
export function countsText(c: JobCounts): string {
  const ended = (['succeeded', 'failed', 'timed_out', 'canceled'] as const).filter((s) => c[s] > 0).map((s) => `${c[s]} ${words(s)}`);
  const open = [c.in_progress > 0 && `${c.in_progress} running`, c.queued > 0 && `${c.queued} queued`].filter(Boolean);
  const head = `${endedOf(c)} of ${totalOf(c)} ended`;
  return [ended.length > 0 ? `${head}: ${ended.join(', ')}` : head, ...(open.length > 0 ? [open.join(', ')] : [])].join(' · ');
}

/** What runs on each device, in a line: the op, the command line, or the file pushed. */
export function specText(job: Pick<Job, 'kind' | 'spec'>): string {
  const s = job.spec;
  switch (job.kind) {
    case 'diagnostics': {
      const params = s.params && Object.keys(s.params).length > 0 ? ` ${JSON.stringify(s.params)}` : '';
      return `${String(s.op)}${params}`;
    }
    case 'command':
      return Array.isArray(s.argv) ? s.argv.map(quote).join(' ') : '';
    case 'file-push':
      return `${String(s.path)} (mode ${String(s.mode ?? '0644')})`;
  }
}

/** An argument as a shell would need it, so the line reads unambiguously (nothing runs it through a shell). */
function quote(arg: unknown): string {
  const a = String(arg);
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** Which devices, in words: the ids, the group and tenant, or the labels. */
export function targetText(t: JobTarget): string {
  if ('device_ids' in t) {
    const shown = t.device_ids.slice(0, 10).join(', ');
    return `${t.device_ids.length === 1 ? 'device' : 'devices'} ${shown}${t.device_ids.length > 10 ? ` and ${t.device_ids.length - 10} more` : ''}`;
  }
  if ('group_id' in t) return `the vehicles of fleet group ${t.group_id} (tenant ${t.tenant})`;
  return `devices labelled ${Object.entries(t.labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`;
}

/**
 * "van-1 van-2" → device ids; "fleet=north role=van" → labels (all of them must match). A mix is
 * refused: the API takes one kind of target.
 */
export function parseTarget(text: string): JobTarget {
  const items = text.split(/[\s,]+/).filter(Boolean);
  if (items.length === 0) throw new Error('Name at least one device id, or labels as key=value.');
  const labelled = items.filter((w) => w.includes('='));
  if (labelled.length === 0) return { device_ids: [...new Set(items)] };
  if (labelled.length !== items.length) throw new Error('Either device ids or key=value labels, not both.');
  return { labels: Object.fromEntries(labelled.map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)])) };
}
