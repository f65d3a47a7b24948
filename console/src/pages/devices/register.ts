/** @module Registering a device (administrators): its id in, its agent token and agent command line out, once. */
import type { DeviceCreated } from '../../../../shared/api/devices';
import { api } from '../../api';
import { h, replace } from '../../dom';
import { submitOnce } from '../../form';
import { agentSetupCard } from './agent-setup';

/** What the server accepts as a device id (docs/http-api.md): checked here too, to say so before asking. */
const DEVICE_ID = '[A-Za-z0-9._\\-]{1,64}';

/** The form, and below it the new device's token; `created` adds the device to the list. */
export function registerForm(created: (deviceId: string) => void): HTMLElement {
  const id = h('input', { id: 'new-device-id', name: 'device_id', required: true, pattern: DEVICE_ID, maxlength: 64, placeholder: 'e.g. van-042' });
  const submit = h('button', { type: 'submit' }, 'Register');
  const result = h('div', { id: 'register-result' });

  async function register(): Promise<void> {
    const device = await api<DeviceCreated>('POST', '/v1/devices', { device_id: id.value.trim() });
    id.value = '';
    replace(result, agentSetupCard(device.device_id, device.agent_token, 'is registered'));
    created(device.device_id);
  }

  return h(
    'div',
    {},
    h(
      'form',
      { class: 'filters', id: 'register-device', onsubmit: submitOnce(submit, result, register) },
      h('label', { for: 'new-device-id' }, 'Register a device'),
      id,
      submit,
    ),
    result,
  );
}
