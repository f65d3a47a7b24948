/**
 * @module Fleet groups of a tenant and each group's vehicles (the fleet interface, scopes
 * `fleet:read` and, to assign, `fleet:write`, in the tenants the token holds).
 */
import type { FleetGroup, FleetGroupPage } from '../../../shared/api/fleet';
import { apiFleet } from '../api';
import { currentUser } from '../auth';
import { errorBox, h, replace, table } from '../dom';
import { timeElement } from '../format';
import { chosenTenant, tenantPicker } from './fleet/tenant';
import { groupVehicles } from './fleet/vehicles';

/** Every group of the tenant (at most 100 a page). */
async function groupsOf(tenant: string): Promise<FleetGroup[]> {
  const all: FleetGroup[] = [];
  for (let page = 1; ; page++) {
    const batch = await apiFleet<FleetGroupPage>('GET', `/v1/fleet/groups?limit=100&page=${page}`, tenant);
    all.push(...batch.groups);
    if (page >= batch.pagination.total_pages) return all;
  }
}

const holds = (scopes: readonly string[], scope: string) => scopes.includes('*') || scopes.includes(scope);

export async function fleetPage(root: HTMLElement, _params: string[], query: URLSearchParams): Promise<void> {
  const me = currentUser()!;
  const tenant = chosenTenant(me, query);
  const heading = h('h1', {}, 'Fleet', tenant ? ` · ${tenant}` : '');
  if (me.tenants.length === 0) {
    return replace(
      root,
      heading,
      h(
        'p',
        { class: 'muted', id: 'fleet-no-tenant' },
        'This token holds no fleet tenant (a password sign-in holds none): sign in with a token an administrator issued with tenants and the fleet scopes.',
      ),
    );
  }
  const groups = h('div', { id: 'fleet-groups', 'aria-live': 'polite' });
  const detail = h('div', { id: 'fleet-detail' });
  replace(root, heading, tenantPicker(me, tenant), groups, detail);
  if (!tenant) return replace(groups, h('p', { class: 'muted' }, 'Name the tenant to show.'));

  const canWrite = holds(me.scopes, 'fleet:write');
  async function load(): Promise<void> {
    try {
      const all = await groupsOf(tenant!);
      replace(
        groups,
        table(
          all,
          {
            Group: (g) =>
              h(
                'button',
                {
                  type: 'button',
                  class: 'link',
                  'data-group': g.group_id,
                  onclick: () =>
                    replace(
                      detail,
                      groupVehicles(tenant!, g, canWrite, () => void load()),
                    ),
                },
                g.name,
              ),
            Region: (g) => g.region ?? '',
            Tags: (g) => g.tags.join(', '),
            Vehicles: (g) => h('span', { 'data-vehicle-count': g.group_id }, g.vehicle_count),
            Created: (g) => timeElement(g.created_at),
            By: (g) => g.created_by,
          },
          'No groups in this tenant.',
        ),
      );
    } catch (err) {
      replace(groups, errorBox((err as Error).message));
    }
  }
  await load();
}
