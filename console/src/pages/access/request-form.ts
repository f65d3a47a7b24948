/**
 * @module Asking for access from the console: a device, the protocols, a reason and a duration
 * (empty: the policy's maximum). Coming from a device page, it opens prefilled
 * (`#/access?device=ID&protocols=shell,file-transfer`).
 */
import type { AccessRequest, CreateRequestBody } from '../../../../shared/api/access';
import type { SessionProtocol } from '../../../../shared/protocol/control-channel';
import { api } from '../../api';
import { currentUser } from '../../auth';
import { h, replace } from '../../dom';
import { submitOnce } from '../../form';
import { timeElement } from '../../format';
import { mayOpen, PROTOCOL_MIN_ROLE } from '../../roles';
import { REASON_MAX } from './ask-reason';
import { PROTOCOLS, protocolList, protocolWords } from './words';

/** The form; `created` is told of each request it made. */
export function requestForm(query: URLSearchParams, created: (r: AccessRequest) => void): HTMLElement {
  const wanted = new Set((query.get('protocols') ?? '').split(',').filter(Boolean));
  const device = h('input', { id: 'access-device', required: true, autocomplete: 'off', value: query.get('device') ?? '', placeholder: 'cam-7' });
  const me = currentUser();
  // A protocol the role may not open cannot be asked for either (the server refuses it).
  const boxes = PROTOCOLS.map((p) =>
    h('input', {
      type: 'checkbox',
      name: 'access-protocol',
      value: p,
      id: `access-protocol-${p}`,
      checked: wanted.has(p) && mayOpen(me, p),
      disabled: !mayOpen(me, p),
      title: mayOpen(me, p) ? undefined : `${protocolWords(p)} needs the role ${PROTOCOL_MIN_ROLE[p]} or higher`,
    }),
  );
  const reason = h('textarea', { id: 'access-request-reason', rows: 2, required: true, maxlength: REASON_MAX, placeholder: 'What you need to do, and why' });
  const minutes = h('input', { id: 'access-duration', type: 'number', min: 1, step: 1, placeholder: 'the policy’s maximum' });
  const submit = h('button', { type: 'submit' }, 'Request access');
  const result = h('div', { id: 'access-request-result', 'aria-live': 'polite' });

  async function send(): Promise<void> {
    const protocols = boxes.filter((b) => b.checked).map((b) => b.value as SessionProtocol);
    if (protocols.length === 0) throw new Error('Choose at least one protocol.');
    const body: CreateRequestBody = {
      device_id: device.value.trim(),
      protocols,
      reason: reason.value.trim(),
      duration_seconds: minutes.value.trim() === '' ? undefined : Math.round(Number(minutes.value) * 60),
    };
    const r = await api<AccessRequest>('POST', '/v1/access-requests', body);
    reason.value = '';
    replace(
      result,
      h(
        'p',
        { role: 'status', 'data-requested': r.request_id },
        `Requested ${protocolList(r.protocols).toLowerCase()} on ${r.device_id}: it waits for an administrator until `,
        timeElement(r.expires_at),
        '. The grant starts when it is approved.',
      ),
    );
    created(r);
  }

  return h(
    'details',
    { class: 'new-request', id: 'access-request', open: query.has('device') },
    h('summary', {}, 'Request access'),
    h(
      'form',
      { class: 'card', id: 'access-request-form', onsubmit: submitOnce(submit, result, send) },
      h('label', { for: 'access-device' }, 'Device'),
      device,
      h(
        'fieldset',
        { class: 'protocols' },
        h('legend', {}, 'Protocols'),
        ...boxes.map((b) => h('label', { class: 'check' }, b, ` ${protocolWords(b.value as SessionProtocol)}`)),
      ),
      h('label', { for: 'access-request-reason' }, 'Reason (recorded in the audit, shown to the reviewer)'),
      reason,
      h('label', { for: 'access-duration' }, 'Duration in minutes, from approval (empty: the longest the policy allows)'),
      minutes,
      h('div', { class: 'actions' }, submit),
    ),
    result,
  );
}
