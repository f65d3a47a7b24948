/**
 * @module A device's administration (administrators): a new agent token (the agent using the old
 * one is disconnected and refused from then on) and removal, each after a question in the page.
 */
import type { AgentTokenIssued, DeviceDeleted } from '../../../../shared/api/devices';
import { api } from '../../api';
import { confirmInline, errorBox, h, replace } from '../../dom';
import { agentSetupCard } from '../devices/agent-setup';

export function deviceAdmin(deviceId: string): HTMLElement {
  const path = `/v1/devices/${encodeURIComponent(deviceId)}`;
  const out = h('div', { id: 'device-admin-result' });

  async function rotate(): Promise<void> {
    const sure = await confirmInline(
      out,
      `Give ${deviceId} a new agent token? The current one stops working at once and its agent is disconnected until it runs with the new one.`,
      'Rotate token',
    );
    if (!sure) return;
    try {
      const issued = await api<AgentTokenIssued>('POST', `${path}/agent-token`, {});
      replace(out, agentSetupCard(issued.device_id, issued.agent_token, 'has a new agent token'));
    } catch (err) {
      replace(out, errorBox((err as Error).message));
    }
  }

  async function remove(): Promise<void> {
    const sure = await confirmInline(out, `Remove ${deviceId}? Its open sessions close and its agent is disconnected for good.`, 'Remove device');
    if (!sure) return;
    try {
      const gone = await api<DeviceDeleted>('DELETE', path);
      replace(out, h('p', { role: 'status' }, `${gone.device_id} was removed (${gone.sessions_closed} sessions closed).`));
      location.hash = '#/devices';
    } catch (err) {
      replace(out, errorBox((err as Error).message));
    }
  }

  return h(
    'div',
    {},
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', id: 'rotate-token', onclick: () => void rotate() }, 'Rotate agent token…'),
      h('button', { type: 'button', id: 'remove-device', class: 'danger', onclick: () => void remove() }, 'Remove device…'),
    ),
    out,
  );
}
