/**
 * @module Services, per environment: each with its status, revision, canary (its revision, weight
 * and state), ready replicas and the endpoint it is reached at, refreshed while the page is open
 * (rollouts move on their own).
 */
import type { Environment, Service } from '../../../shared/api/services';
import { api } from '../api';
import { errorBox, h, replace, table } from '../dom';
import { timeElement } from '../format';
import type { Cleanup } from '../page';

/** The environments, in the order the page shows them. */
export const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const satisfies readonly Environment[];

/** How often the page asks again: a rollout moves a replica at a time. */
const REFRESH_MS = 3000;

/** `#/services/ENV/NAME`. */
export const serviceHref = (env: Environment, name: string) => `#/services/${env}/${encodeURIComponent(name)}`;

/** A service's status as a badge, named for tests and screen readers alike. */
export const statusBadge = (s: Pick<Service, 'name' | 'status'>) => h('span', { class: `status ${s.status}`, 'data-service': s.name }, s.status);

/**
 * Where a service's canary stands, from its record: rolling out while its replicas come up, ready
 * (to promote) once they are, failed with the rollout; a dash without one.
 */
export function canaryState(s: Pick<Service, 'status' | 'canary' | 'replicas'>): string {
  if (!s.canary) return 'none';
  if (s.status === 'failed') return 'failed';
  if (s.canary.weight === 0) return 'halted';
  return s.status === 'deploying' ? `rolling out (${s.replicas.ready}/${s.replicas.desired} ready)` : 'ready';
}

function canaryCell(s: Service): HTMLElement {
  if (!s.canary) return h('span', { class: 'muted', 'data-canary': s.name }, '—');
  return h('span', { 'data-canary': s.name }, `${s.canary.weight} % · ${canaryState(s)}`);
}

/** Every service of an environment (at most 200 a page). */
async function servicesOf(env: Environment): Promise<Service[]> {
  const all: Service[] = [];
  for (let page = 1; ; page++) {
    const batch = await api<Service[]>('GET', `/v1/services?env=${env}&per_page=200&page=${page}`);
    all.push(...batch);
    if (batch.length < 200) return all;
  }
}

export function servicesPage(root: HTMLElement): Cleanup {
  const sections = new Map(
    ENVIRONMENTS.map((env) => [env, h('div', { id: `services-${env}`, 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'))]),
  );
  replace(root, h('h1', {}, 'Services'), ...ENVIRONMENTS.flatMap((env) => [h('h2', {}, env), sections.get(env)!]));

  async function render(env: Environment): Promise<void> {
    const section = sections.get(env)!;
    try {
      const services = await servicesOf(env);
      replace(
        section,
        table(
          services,
          {
            Service: (s) => h('a', { href: serviceHref(env, s.name) }, s.name),
            Status: (s) => statusBadge(s),
            Revision: (s) => (s.canary ? `${s.current_revision}, canary ${s.canary.revision} at ${s.canary.weight} %` : s.current_revision),
            Ready: (s) => `${s.replicas.ready}/${s.replicas.desired}`,
            Endpoint: (s) => (s.endpoint ? h('code', {}, s.endpoint) : h('span', { class: 'muted', title: `the ${s.runtime} runtime runs no ingress` }, '—')),
            Canary: (s) => canaryCell(s),
            Deployed: (s) => timeElement(s.last_deployed_at),
          },
          `No services in ${env}.`,
        ),
      );
    } catch (err) {
      replace(section, errorBox((err as Error).message));
    }
  }
  const renderAll = () => void Promise.all(ENVIRONMENTS.map(render));
  renderAll();
  const tick = setInterval(renderAll, REFRESH_MS);
  return () => clearInterval(tick);
}
