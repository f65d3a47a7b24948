/**
 * @module One service in one environment: its status (and why a rollout failed), ready replicas
 * per revision, where it is reached, its revisions, and its canary with a weight slider, halt and
 * promote (./service/canary.ts). Refreshed while the page is open.
 */
import type { CanaryState, Environment, Revision, ServiceDetail } from '../../../shared/api/services';
import { api, apiList } from '../api';
import { append, errorBox, h, replace, table } from '../dom';
import { timeElement } from '../format';
import type { Cleanup } from '../page';
import { canaryControls } from './service/canary';
import { ENVIRONMENTS, statusBadge } from './services';

const REFRESH_MS = 3000;

/** The facts of a service, as a definition list. */
function facts(s: ServiceDetail): HTMLElement {
  const rows: Array<[string, Node | string]> = [
    ['Status', `${s.status}, ${s.replicas.ready} of ${s.replicas.desired} replicas ready`],
    ['Revision', s.current_revision],
    ['Previous', s.previous_revision ?? '—'],
  ];
  if (s.replicas.by_revision) {
    const counts = Object.entries(s.replicas.by_revision).map(([revision, n]) => `${revision}: ${n}`);
    rows.push(['Ready by revision', counts.join(', ') || 'none']);
  }
  rows.push(
    [
      'Endpoint',
      s.endpoint ? h('code', { id: 'service-endpoint' }, `curl -H 'Host: ${s.name}' ${s.endpoint}/`) : `none (the ${s.runtime} runtime runs no ingress)`,
    ],
    ['Image', h('code', {}, s.image)],
    ['Sync', s.gitops_sync_status],
    ['Runtime', s.runtime],
    ['Last deployed', timeElement(s.last_deployed_at)],
  );
  return h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
}

export async function servicePage(root: HTMLElement, [env, name]: string[]): Promise<Cleanup | void> {
  if (!ENVIRONMENTS.includes(env as Environment)) return void replace(root, errorBox(`No environment ${env}: dev, staging or prod.`));
  const e = env as Environment;
  const base = `/v1/services/${encodeURIComponent(name!)}`;
  const q = `env=${e}`;
  const title = h('h1', {}, name!, ' ', h('span', { class: 'muted' }, `in ${e}`), ' ');
  const badge = h('span');
  const failure = h('div', { id: 'service-failure' });
  let shownFailure: string | undefined;
  const about = h('section', { id: 'service-facts' });
  const revisions = h('section', { id: 'service-revisions' });
  const problem = h('div');
  const canary = canaryControls(`${base}/canary`, q, () => void refresh());
  append(title, badge);
  replace(root, title, problem, failure, about, h('h2', {}, 'Canary'), canary.root, h('h2', {}, 'Revisions'), revisions);

  async function refresh(): Promise<void> {
    try {
      const [s, c, history] = await Promise.all([
        api<ServiceDetail>('GET', `${base}?${q}`),
        api<CanaryState>('GET', `${base}/canary?${q}`),
        apiList<Revision>(`${base}/revisions?${q}&per_page=100`),
      ]);
      replace(problem);
      replace(badge, statusBadge(s));
      // Said once (an alert), not again with every refresh.
      if (s.status_message !== shownFailure) {
        shownFailure = s.status_message;
        replace(
          failure,
          s.status_message &&
            h(
              'div',
              { class: 'card', role: 'alert' },
              h('strong', { class: 'error' }, 'The rollout failed:'),
              h('pre', { class: 'log', id: 'service-status-message' }, s.status_message),
            ),
        );
      }
      replace(about, facts(s));
      canary.show(c, s);
      const statusOf = (r: Revision) => (c.canary?.revision === r.revision ? `canary (${c.canary.weight} %)` : r.status);
      replace(
        revisions,
        table(
          history.data,
          {
            Revision: (r) => r.revision,
            Status: (r) => statusOf(r),
            // Ready replicas of each revision, when the runtime reports them (not the simulated one).
            ...(s.replicas.by_revision && { Ready: (r: Revision) => s.replicas.by_revision?.[r.revision] ?? 0 }),
            Image: (r) => h('code', {}, r.image),
            Deployed: (r) => timeElement(r.deployed_at),
            By: (r) => r.deployed_by,
          },
          'No revisions.',
        ),
      );
    } catch (err) {
      replace(problem, errorBox((err as Error).message));
    }
  }
  await refresh();
  const tick = setInterval(() => void refresh(), REFRESH_MS);
  return () => clearInterval(tick);
}
