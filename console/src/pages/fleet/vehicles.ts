/** @module One fleet group's vehicles, and assigning a vehicle to the group by its id. */
import type { FleetAssignment, FleetGroup, FleetGroupVehicles } from '../../../../shared/api/fleet';
import { apiFleet } from '../../api';
import { errorBox, h, replace, table } from '../../dom';

/** Every page of a group's vehicles (at most 100 a page). */
async function vehiclesOf(tenant: string, groupId: string): Promise<FleetGroupVehicles['vehicles']> {
  const all: FleetGroupVehicles['vehicles'] = [];
  for (let page = 1; ; page++) {
    const batch = await apiFleet<FleetGroupVehicles>('GET', `/v1/fleet/groups/${encodeURIComponent(groupId)}/vehicles?limit=100&page=${page}`, tenant);
    all.push(...batch.vehicles);
    if (page >= batch.pagination.total_pages) return all;
  }
}

/** The group's card: its vehicles, and a form to move a vehicle into it; `changed` reloads the groups' counts. */
export function groupVehicles(tenant: string, group: FleetGroup, canWrite: boolean, changed: () => void): HTMLElement {
  const list = h('div', { id: 'fleet-vehicles', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'));
  const status = h('div', { role: 'status' });
  const vehicle = h('input', { id: 'assign-vehicle', required: true, placeholder: 'vehicle id' });

  async function load(): Promise<void> {
    try {
      const vehicles = await vehiclesOf(tenant, group.group_id);
      replace(
        list,
        table(
          vehicles,
          {
            Vehicle: (v) => h('code', { 'data-vehicle': v.vehicle_id }, v.vehicle_id),
            VIN: (v) => h('code', {}, v.vin),
            // Lists that carry the vehicle's device (newer servers) show it; older ones have none.
            Device: (v) =>
              'device_id' in v && typeof v.device_id === 'string' ? h('a', { href: `#/devices/${encodeURIComponent(v.device_id)}` }, v.device_id) : '',
            Status: (v) => v.status,
          },
          'No vehicles in this group.',
        ),
      );
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }

  async function assign(): Promise<void> {
    try {
      const done = await apiFleet<FleetAssignment>('PUT', `/v1/fleet/vehicles/${encodeURIComponent(vehicle.value.trim())}/group`, tenant, {
        group_id: group.group_id,
      });
      vehicle.value = '';
      replace(status, h('p', { class: 'muted' }, `${done.vehicle_id} (${done.vin}) is now in ${done.group_name}.`));
      changed();
    } catch (err) {
      replace(status, errorBox((err as Error).message));
    }
    await load();
  }

  void load();
  return h(
    'section',
    { class: 'card', id: 'fleet-group', 'data-group': group.group_id },
    h('h2', {}, group.name),
    h('p', { class: 'muted' }, [group.region, group.description, group.tags.join(', ')].filter(Boolean).join(' · ')),
    list,
    canWrite &&
      h(
        'form',
        { class: 'filters', onsubmit: (e: Event) => (e.preventDefault(), void assign()) },
        h('label', { for: 'assign-vehicle' }, 'Assign a vehicle'),
        vehicle,
        h('button', { type: 'submit' }, 'Assign'),
      ),
    status,
  );
}
