/**
 * @module Access policies: which devices (by labels) and protocols need an approved request, and
 * for how long a grant may run. Everyone with the page sees them; administrators add and delete
 * them (a deleted policy stops applying; the requests that named it keep their history).
 */
import type { AccessPolicy, CreatePolicyBody } from '../../../../shared/api/access';
import type { Me } from '../../../../shared/api/identity';
import type { SessionProtocol } from '../../../../shared/protocol/control-channel';
import { api, apiList } from '../../api';
import { confirmInline, errorBox, h, replace, table } from '../../dom';
import { submitOnce } from '../../form';
import { timeElement } from '../../format';
import { isAdmin } from '../../roles';
import { durationText, labelsText, parseLabels, PROTOCOLS, protocolWords } from './words';

function newPolicyForm(added: () => void): HTMLElement {
  const name = h('input', { id: 'policy-name', required: true, maxlength: 100, autocomplete: 'off', placeholder: 'production devices' });
  const labels = h('input', { id: 'policy-labels', required: true, autocomplete: 'off', placeholder: 'env=prod' });
  const boxes = PROTOCOLS.map((p) =>
    h('input', { type: 'checkbox', name: 'policy-protocol', value: p, id: `policy-protocol-${p}`, checked: p === 'shell' || p === 'file-transfer' }),
  );
  const minutes = h('input', { id: 'policy-max-duration', type: 'number', min: 1, max: 10_080, step: 1, placeholder: '60' });
  const submit = h('button', { type: 'submit' }, 'Add policy');
  const result = h('div', { id: 'policy-result', 'aria-live': 'polite' });

  async function add(): Promise<void> {
    const protocols = boxes.filter((b) => b.checked).map((b) => b.value as SessionProtocol);
    if (protocols.length === 0) throw new Error('Choose at least one protocol.');
    const body: CreatePolicyBody = {
      name: name.value.trim(),
      match: { labels: parseLabels(labels.value) },
      protocols,
      max_duration_seconds: minutes.value.trim() === '' ? undefined : Math.round(Number(minutes.value) * 60),
    };
    const p = await api<AccessPolicy>('POST', '/v1/access-policies', body);
    name.value = '';
    labels.value = '';
    replace(result, h('p', { role: 'status', class: 'muted' }, `Added “${p.name}”: ${labelsText(p.match.labels)} devices now need a request.`));
    added();
  }

  return h(
    'details',
    { id: 'new-policy' },
    h('summary', {}, 'Add a policy'),
    h(
      'form',
      { class: 'card', id: 'policy-form', onsubmit: submitOnce(submit, result, add) },
      h('label', { for: 'policy-name' }, 'Name'),
      name,
      h('label', { for: 'policy-labels' }, 'Devices with these labels (key=value, all must match)'),
      labels,
      h(
        'fieldset',
        { class: 'protocols' },
        h('legend', {}, 'Protocols that need a request'),
        ...boxes.map((b) => h('label', { class: 'check' }, b, ` ${protocolWords(b.value as SessionProtocol)}`)),
      ),
      h('label', { for: 'policy-max-duration' }, 'Longest grant, in minutes (empty: 60)'),
      minutes,
      h('div', { class: 'actions' }, submit),
    ),
    result,
  );
}

/** The policies section: its list (read again by the returned function) and, for administrators, the form. */
export function policiesSection(me: Me | undefined): { element: HTMLElement; refresh: () => Promise<void> } {
  const list = h('div', { id: 'policy-list' });
  const panel = h('div', { id: 'policy-panel' });
  const admin = isAdmin(me);

  async function remove(p: AccessPolicy): Promise<void> {
    const sure = await confirmInline(
      panel,
      `Delete the policy “${p.name}”? Its devices no longer need a request (grants already given stay).`,
      'Delete policy',
    );
    if (!sure) return;
    try {
      await api('DELETE', `/v1/access-policies/${encodeURIComponent(p.policy_id)}`);
      replace(panel, h('p', { role: 'status', class: 'muted' }, `Deleted the policy “${p.name}”.`));
    } catch (err) {
      replace(panel, errorBox((err as Error).message));
    }
    await refresh();
  }

  async function refresh(): Promise<void> {
    try {
      const { data } = await apiList<AccessPolicy>('/v1/access-policies?per_page=200');
      replace(
        list,
        table(
          data,
          {
            Name: (p) => h('span', { 'data-policy': p.policy_id }, p.name),
            Devices: (p) => h('code', {}, labelsText(p.match.labels)),
            Protocols: (p) => p.protocols.map(protocolWords).join(', '),
            'Longest grant': (p) => durationText(p.max_duration_seconds),
            'Created by': (p) => p.created_by,
            Created: (p) => timeElement(p.created_at),
            '': (p) => admin && h('button', { type: 'button', class: 'danger', 'data-delete-policy': p.policy_id, onclick: () => void remove(p) }, 'Delete'),
          },
          'No policies: every device is open to the roles that may use it.',
        ),
      );
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }

  const element = h(
    'section',
    { id: 'access-policies', 'aria-labelledby': 'access-policies-title' },
    h('h2', { id: 'access-policies-title' }, 'Policies'),
    h('p', { class: 'muted' }, 'Sessions of these protocols on these devices need an approved request, for every role.'),
    admin && newPolicyForm(() => void refresh()),
    panel,
    list,
  );
  return { element, refresh };
}
