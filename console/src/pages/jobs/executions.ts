/**
 * @module A job's executions, one a device, filtered by status and a page at a time: the device
 * (linked to its page), status, attempt, exit code, when it started and ended, why it did not
 * succeed, its output's tail (expandable) and a diagnostics result as formatted JSON.
 */
import type { Execution, ExecutionStatus } from '../../../../shared/api/jobs';
import { apiList } from '../../api';
import { errorBox, formatBytes, h, replace, table } from '../../dom';
import { timeElement } from '../../format';
import { pager, statusBadge } from './view';
import { EXECUTION_STATUS_ORDER, words } from './words';

const PER_PAGE = 100;

/** Something long, folded: the summary says what and how big, the `<pre>` holds it. */
function folded(summary: string, text: string, attrs: Record<string, string>): HTMLElement {
  return h('details', { class: 'job-output' }, h('summary', {}, summary), h('pre', { class: 'log', ...attrs }, text));
}

function outputCell(e: Execution): HTMLElement | string {
  if (e.output_tail === null) return '';
  if (e.output_tail === '') return h('span', { class: 'muted' }, 'no output');
  const bytes = new TextEncoder().encode(e.output_tail).length;
  return folded(`output (${formatBytes(bytes)}, the last of it)`, e.output_tail, { 'data-output': e.device_id });
}

function resultCell(e: Execution): HTMLElement | string {
  if (e.result === null || e.result === undefined) return '';
  return folded('result', JSON.stringify(e.result, null, 2), { 'data-result': e.device_id });
}

/** The executions section and the refetch that the job's page calls when something changed. */
export function executionsView(jobId: string): { root: HTMLElement; refresh: () => Promise<void> } {
  const status = h(
    'select',
    { id: 'execution-status', 'aria-label': 'Execution status' },
    h('option', { value: '' }, 'Any status'),
    ...EXECUTION_STATUS_ORDER.map((s) => h('option', { value: s }, words(s))),
  );
  const list = h('div', { id: 'execution-list' });
  const paging = h('div');
  let page = 1;

  async function refresh(): Promise<void> {
    const q = new URLSearchParams({ per_page: String(PER_PAGE), page: String(page) });
    if (status.value) q.set('status', status.value);
    try {
      const { data, meta } = await apiList<Execution>(`/v1/jobs/${encodeURIComponent(jobId)}/executions?${q}`);
      const pages = Math.max(1, Math.ceil(meta.total / meta.per_page));
      // Open outputs stay open across a refresh: the rows are rebuilt, the reader's place is not lost.
      const open = new Set(
        [...list.querySelectorAll('details[open] pre')].map((p) => `${p.getAttribute('data-output') ?? ''}|${p.getAttribute('data-result') ?? ''}`),
      );
      replace(
        list,
        table(
          data,
          {
            Device: (e) => h('a', { href: `#/devices/${encodeURIComponent(e.device_id)}`, 'data-device': e.device_id }, e.device_id),
            Status: (e) => statusBadge(e.status, { 'data-execution-status': e.device_id }),
            Attempt: (e) => e.attempt,
            'Exit code': (e) => (e.exit_code === null ? '' : h('span', { 'data-exit-code': e.device_id }, String(e.exit_code))),
            Started: (e) => (e.started_at ? timeElement(e.started_at) : ''),
            Finished: (e) => (e.finished_at ? timeElement(e.finished_at) : ''),
            Error: (e) => (e.error ? h('span', { 'data-error': e.device_id, title: e.error.message }, h('code', {}, e.error.code), ` ${e.error.message}`) : ''),
            Output: outputCell,
            Result: resultCell,
          },
          status.value ? `No ${words(status.value as ExecutionStatus)} executions.` : 'No executions.',
        ),
      );
      for (const pre of list.querySelectorAll('details pre')) {
        const key = `${pre.getAttribute('data-output') ?? ''}|${pre.getAttribute('data-result') ?? ''}`;
        if (open.has(key)) pre.parentElement!.toggleAttribute('open', true);
      }
      replace(paging, meta.total > data.length || page > 1 ? pager(page, pages, go, 'execution-pager') : '');
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }
  const go = (p: number) => {
    page = p;
    void refresh();
  };
  status.addEventListener('change', () => go(1));

  return { root: h('section', {}, h('h2', {}, 'Executions'), h('div', { class: 'filters' }, status), list, paging), refresh };
}
