/** @module The remote-access audit log, filterable by event, device and actor, a page at a time. */
import type { AuditEvent, AuditEventName } from '../../../shared/api/sessions';
import { apiList } from '../api';
import { errorBox, h, replace, table } from '../dom';
import { timeElement } from '../format';

/** Every event the audit holds, in the order the filter offers them (a type check keeps it whole). */
const EVENTS = Object.keys({
  'session.opened': true,
  'session.closed': true,
  'session.expired': true,
  'session.joined': true,
  'session.extended': true,
  'recording.viewed': true,
  'job.created': true,
  'job.canceled': true,
  'job.aborted': true,
  'job.completed': true,
  'access_request.created': true,
  'access_request.approved': true,
  'access_request.denied': true,
  'access_request.canceled': true,
  'access_request.expired': true,
  'access_request.revoked': true,
} satisfies Record<AuditEventName, true>);

export async function auditPage(root: HTMLElement): Promise<void> {
  const event = h(
    'select',
    { id: 'audit-event', 'aria-label': 'Event' },
    h('option', { value: '' }, 'Any event'),
    ...EVENTS.map((e) => h('option', { value: e }, e)),
  );
  const device = h('input', { id: 'audit-device', placeholder: 'Device', 'aria-label': 'Device' });
  const actor = h('input', { id: 'audit-actor', placeholder: 'Actor', 'aria-label': 'Actor' });
  const list = h('div', { id: 'audit-list' });
  const pager = h('div', { class: 'actions' });
  let page = 1;

  async function render(): Promise<void> {
    const q = new URLSearchParams({ per_page: '50', page: String(page) });
    if (event.value) q.set('event', event.value);
    if (device.value.trim()) q.set('device_id', device.value.trim());
    if (actor.value.trim()) q.set('actor', actor.value.trim());
    try {
      const { data, meta } = await apiList<AuditEvent>(`/v1/audit/remote-access?${q}`);
      replace(
        list,
        table(
          data,
          {
            When: (e) => timeElement(e.at),
            Event: (e) => e.event,
            // A job event names its job, an access event its request, where a session event names its session.
            Session: (e) => h('code', {}, e.session_id ?? e.job_id ?? e.request_id ?? ''),
            Device: (e) => e.device_id ?? '',
            Protocol: (e) => e.protocol ?? '',
            Actor: (e) => e.actor,
            Reason: (e) => e.reason ?? '',
          },
          'No events match.',
        ),
      );
      const pages = Math.max(1, Math.ceil(meta.total / meta.per_page));
      replace(
        pager,
        h('button', { type: 'button', disabled: page <= 1, onclick: () => ((page -= 1), void render()) }, 'Newer'),
        h('span', { class: 'muted' }, `page ${page} of ${pages}`),
        h('button', { type: 'button', disabled: page >= pages, onclick: () => ((page += 1), void render()) }, 'Older'),
      );
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }
  const form = h(
    'form',
    { class: 'filters', onsubmit: (e: Event) => (e.preventDefault(), (page = 1), void render()) },
    event,
    device,
    actor,
    h('button', { type: 'submit' }, 'Filter'),
  );
  replace(root, h('h1', {}, 'Audit'), form, list, pager);
  await render();
}
