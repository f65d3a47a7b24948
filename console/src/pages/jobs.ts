/**
 * @module Jobs: yours (administrators: everyone's), newest first, filtered by status, a page at a
 * time, each with its progress kept live from the event stream; a form starts a diagnostics job.
 */
import type { Job, JobStatus } from '../../../shared/api/jobs';
import { apiList } from '../api';
import { errorBox, h, replace, table } from '../dom';
import { timeElement } from '../format';
import type { Cleanup } from '../page';
import { followJobs } from './jobs/live';
import { newJobForm } from './jobs/new-job';
import { pager, progress, statusBadge } from './jobs/view';
import { JOB_STATUS_ORDER, specText, words } from './jobs/words';

const PER_PAGE = 50;

export async function jobsPage(root: HTMLElement, _params: string[], query: URLSearchParams): Promise<Cleanup> {
  const status = h(
    'select',
    { id: 'job-status-filter', 'aria-label': 'Status' },
    h('option', { value: '' }, 'Any status'),
    ...JOB_STATUS_ORDER.map((s) => h('option', { value: s }, words(s))),
  );
  const wantedStatus = query.get('status');
  if (wantedStatus && (JOB_STATUS_ORDER as string[]).includes(wantedStatus)) status.value = wantedStatus;
  const list = h('div', { id: 'job-list' });
  const paging = h('div');
  let page = 1;
  /** The jobs shown now, so an event about one of them (or a new one) refetches. */
  let shown = new Map<string, JobStatus>();

  async function render(): Promise<void> {
    const q = new URLSearchParams({ per_page: String(PER_PAGE), page: String(page) });
    if (status.value) q.set('status', status.value);
    try {
      const { data, meta } = await apiList<Job>(`/v1/jobs?${q}`);
      shown = new Map(data.map((j) => [j.job_id, j.status]));
      replace(
        list,
        table(
          data,
          {
            Job: (j) => h('a', { href: `#/jobs/${encodeURIComponent(j.job_id)}`, 'data-job': j.job_id }, h('code', {}, j.job_id)),
            Kind: (j) => j.kind,
            'What runs': (j) => h('span', { class: 'cmd', title: specText(j) }, specText(j)),
            Status: (j) => statusBadge(j.status, { 'data-job-status': j.job_id }),
            Progress: (j) => progress(j.counts, { 'data-job-progress': j.job_id }),
            'Created by': (j) => j.created_by,
            Created: (j) => timeElement(j.created_at),
          },
          status.value ? `No ${words(status.value)} jobs.` : 'No jobs yet.',
        ),
      );
      const pages = Math.max(1, Math.ceil(meta.total / meta.per_page));
      replace(paging, meta.total > data.length || page > 1 ? pager(page, pages, go, 'job-pager') : '');
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }
  const go = (p: number) => {
    page = p;
    void render();
  };

  status.addEventListener('change', () => go(1));
  replace(root, h('h1', {}, 'Jobs'), newJobForm(), h('div', { class: 'filters' }, status), list, paging);
  await render();

  const follow = followJobs({
    // A job on this page changed, or a new one started (it shows first on the first page).
    wanted: (e) => shown.has(e.job_id) || (page === 1 && (!status.value || status.value === e.status)),
    refetch: render,
    active: () => [...shown.values()].some((s) => s === 'in_progress'),
  });
  return follow.stop;
}
