/** @module Devices: search and filter, presence updated live, last seen; administrators register devices here. */
import type { Device } from '../../../shared/api/devices';
import { api } from '../api';
import { currentUser } from '../auth';
import { h, replace, table } from '../dom';
import { onLive } from '../events';
import { timeElement } from '../format';
import type { Cleanup } from '../page';
import { isAdmin } from '../roles';
import { registerForm } from './devices/register';

export async function devicesPage(root: HTMLElement): Promise<Cleanup> {
  const devices = new Map<string, Device>();
  // Every page of the list (at most 200 a page).
  for (let page = 1; ; page++) {
    const batch = await api<Device[]>('GET', `/v1/devices?per_page=200&page=${page}`);
    for (const d of batch) devices.set(d.device_id, d);
    if (batch.length < 200) break;
  }
  const search = h('input', { type: 'search', id: 'device-search', placeholder: 'Search by id or label', 'aria-label': 'Search devices' });
  const status = h(
    'select',
    { id: 'device-status', 'aria-label': 'Agent status' },
    h('option', { value: '' }, 'All'),
    h('option', { value: 'online' }, 'Online'),
    h('option', { value: 'offline' }, 'Offline'),
  );
  const list = h('div', { id: 'device-list', 'aria-live': 'polite' });
  const count = h('p', { class: 'muted' });

  function render(): void {
    const q = search.value.trim().toLowerCase();
    const shown = [...devices.values()]
      .filter((d) => !status.value || d.agent_status === status.value)
      .filter((d) => !q || d.device_id.toLowerCase().includes(q) || Object.entries(d.labels).some(([k, v]) => `${k}=${v}`.toLowerCase().includes(q)))
      .sort((a, b) => a.device_id.localeCompare(b.device_id));
    replace(count, `${shown.length} of ${devices.size} devices`);
    replace(
      list,
      table(
        shown,
        {
          Device: (d) => h('a', { href: `#/devices/${encodeURIComponent(d.device_id)}` }, d.device_id),
          Agent: (d) => h('span', { class: `status ${d.agent_status}`, 'data-device': d.device_id }, d.agent_status),
          'Last seen': (d) => timeElement(d.last_seen_at),
          Labels: (d) =>
            Object.entries(d.labels)
              .map(([k, v]) => `${k}=${v}`)
              .join(', '),
          Version: (d) => d.agent_version ?? '',
        },
        'No devices match.',
      ),
    );
  }
  search.addEventListener('input', render);
  status.addEventListener('change', render);
  /** A device registered here, or one that came online unseen: read it and show it. */
  const learn = (id: string) =>
    void api<Device>('GET', `/v1/devices/${encodeURIComponent(id)}`).then(
      (d) => {
        devices.set(d.device_id, d);
        render();
      },
      () => {}, // removed meanwhile: nothing to show
    );
  replace(root, h('h1', {}, 'Devices'), isAdmin(currentUser()) && registerForm(learn), h('div', { class: 'filters' }, search, status), count, list);
  render();

  const stop = onLive((e) => {
    if (e.event !== 'agent.online' && e.event !== 'agent.offline') return;
    const id = e.data.device_id;
    if (!id) return;
    const known = devices.get(id);
    if (known) {
      known.agent_status = e.event === 'agent.online' ? 'online' : 'offline';
      known.last_seen_at = e.data.at;
      render();
    } else learn(id);
  });
  return stop;
}
