/**
 * @module Access requests (`#/access`): the requests (administrators: everyone's, pending first,
 * to approve or deny; others: their own, to cancel), each grant's window with a countdown while it
 * runs, a form to ask for access (prefilled from a device page) and the policies. Kept live from
 * the event stream (`access_request.*`), refetched at most once a second.
 */
import type { AccessRequest } from '../../../shared/api/access';
import { apiList } from '../api';
import { currentUser } from '../auth';
import { errorBox, h, replace } from '../dom';
import type { Cleanup } from '../page';
import { isAdmin } from '../roles';
import { pager } from './jobs/view';
import { followAccess, type Follow } from './access/live';
import { policiesSection } from './access/policies';
import { requestForm } from './access/request-form';
import { requestsTable, tickCountdowns } from './access/requests';
import { ACCESS_STATUS_ORDER, pendingFirst } from './access/words';

const PER_PAGE = 50;

export async function accessPage(root: HTMLElement, _params: string[], query: URLSearchParams): Promise<Cleanup> {
  const me = currentUser();
  const admin = isAdmin(me);
  const status = h(
    'select',
    { id: 'access-status-filter', 'aria-label': 'Status' },
    h('option', { value: '' }, 'Any status'),
    ...ACCESS_STATUS_ORDER.map((s) => h('option', { value: s }, s)),
  );
  const wantedStatus = query.get('status');
  if (wantedStatus && (ACCESS_STATUS_ORDER as string[]).includes(wantedStatus)) status.value = wantedStatus;
  const device = h('input', { id: 'access-device-filter', type: 'search', placeholder: 'Device', 'aria-label': 'Device' });
  const panel = h('div', { id: 'access-panel', 'aria-live': 'polite' });
  const list = h('div', { id: 'access-list' });
  const paging = h('div');
  let page = 1;
  /** Set once the first read is done (a change before then is read when following starts). */
  let follow: Follow | undefined;

  async function render(): Promise<void> {
    const q = new URLSearchParams({ per_page: String(PER_PAGE), page: String(page) });
    if (status.value) q.set('status', status.value);
    if (device.value.trim()) q.set('device_id', device.value.trim());
    try {
      const { data, meta } = await apiList<AccessRequest>(`/v1/access-requests?${q}`);
      const empty = status.value ? `No ${status.value} requests.` : admin ? 'No access requests yet.' : 'You have asked for no access yet.';
      replace(list, requestsTable(pendingFirst(data), { me, panel, changed: () => follow?.poke() }, empty));
      const pages = Math.max(1, Math.ceil(meta.total / meta.per_page));
      replace(paging, meta.total > data.length || page > 1 ? pager(page, pages, go, 'access-pager') : '');
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }
  const go = (p: number) => {
    page = p;
    void render();
  };
  status.addEventListener('change', () => go(1));
  device.addEventListener('change', () => go(1));

  const policies = policiesSection(me);
  replace(
    root,
    h('h1', {}, 'Access'),
    h(
      'p',
      { class: 'muted' },
      admin
        ? 'Requests for sessions on devices a policy protects. Approve or deny those of others; a grant runs from approval for its duration.'
        : 'Your requests for sessions on devices a policy protects. An administrator approves or denies each; a grant runs from approval for its duration.',
    ),
    requestForm(query, () => follow?.poke()),
    h('h2', {}, admin ? 'Requests' : 'Your requests'),
    h('div', { class: 'filters' }, status, device),
    panel,
    list,
    paging,
    policies.element,
  );
  await Promise.all([render(), policies.refresh()]);
  // Once read: following reads again at once, for what changed before it subscribed.
  const live = followAccess(render);
  follow = live;

  // The countdowns; a grant that ran out is read again (its end has no event).
  const ticker = setInterval(() => {
    if (tickCountdowns(list)) live.poke();
  }, 1000);
  return () => {
    clearInterval(ticker);
    live.stop();
  };
}
