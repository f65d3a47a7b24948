/**
 * @module How the jobs pages show a job: its status as a badge, its counts as a stacked progress
 * bar with the numbers beside it (./words.ts), and a pager. Shared by the list (`#/jobs`) and a
 * job's page (`#/jobs/ID`).
 */
import type { ExecutionStatus, JobCounts, JobStatus } from '../../../../shared/api/jobs';
import { h } from '../../dom';
import { countsText, endedOf, EXECUTION_STATUS_ORDER, totalOf, words } from './words';

/** A status as a badge; the status itself in `data-status` for whoever reads the page by script. */
export function statusBadge(status: JobStatus | ExecutionStatus, attrs: Record<string, string> = {}): HTMLElement {
  return h('span', { class: `status ${status}`, 'data-status': status, ...attrs }, words(status));
}

/**
 * The counts as one bar, a segment per status sized by its share, with the numbers in words beside
 * it; the bar is a `progressbar` (ended of all) for assistive technology.
 */
export function progress(c: JobCounts, attrs: Record<string, string> = {}): HTMLElement {
  const total = totalOf(c);
  const bar = h('span', {
    class: 'job-bar',
    role: 'progressbar',
    'aria-valuemin': 0,
    'aria-valuemax': total,
    'aria-valuenow': endedOf(c),
    'aria-label': 'Executions ended',
  });
  for (const s of EXECUTION_STATUS_ORDER) {
    if (c[s] === 0 || total === 0) continue;
    const segment = h('span', { class: s, title: `${c[s]} ${words(s)}` });
    // A width set through the CSSOM, not a style attribute: the page's CSP stays as strict as it is.
    segment.style.width = `${(100 * c[s]) / total}%`;
    bar.append(segment);
  }
  const counts = h('span', { class: 'job-counts', 'data-counts': JSON.stringify(c) }, countsText(c));
  return h('span', { class: 'job-progress', ...attrs }, bar, counts);
}

/** A pager's buttons and where it is; `go` moves to another page. */
export function pager(page: number, pages: number, go: (page: number) => void, id: string): HTMLElement {
  return h(
    'div',
    { class: 'actions', id },
    h('button', { type: 'button', 'data-page': 'previous', disabled: page <= 1, onclick: () => go(page - 1) }, 'Previous'),
    h('span', { class: 'muted' }, `page ${page} of ${pages}`),
    h('button', { type: 'button', 'data-page': 'next', disabled: page >= pages, onclick: () => go(page + 1) }, 'Next'),
  );
}
