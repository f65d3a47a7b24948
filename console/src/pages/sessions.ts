/** @module Sessions: yours (administrators: everyone's), with byte counters, close, and each recording's player. */
import type { Session } from '../../../shared/api/sessions';
import { api, apiList } from '../api';
import { errorBox, formatBytes, h, replace, table } from '../dom';
import { onLive } from '../events';
import { timeElement } from '../format';
import type { Cleanup } from '../page';

export async function sessionsPage(root: HTMLElement): Promise<Cleanup> {
  const status = h(
    'select',
    { id: 'session-status', 'aria-label': 'Status' },
    h('option', { value: '' }, 'All'),
    h('option', { value: 'open' }, 'Open'),
    h('option', { value: 'closed' }, 'Closed'),
  );
  const list = h('div', { id: 'session-list' });
  const news = h('p', { role: 'status', 'aria-live': 'polite' });
  replace(root, h('h1', {}, 'Sessions'), h('div', { class: 'filters' }, status), news, list);

  async function render(): Promise<void> {
    const q = new URLSearchParams({ per_page: '100' });
    if (status.value) q.set('status', status.value);
    try {
      const { data, meta } = await apiList<Session>(`/v1/remote-access/sessions?${q}`);
      replace(
        list,
        meta.total > data.length ? h('p', { class: 'muted' }, `The newest ${data.length} of ${meta.total}.`) : '',
        table(
          data,
          {
            Session: (s) => h('code', {}, s.session_id),
            Device: (s) => h('a', { href: `#/devices/${encodeURIComponent(s.device_id)}` }, s.device_id),
            Protocol: (s) => s.protocol + (s.targets ? ` (${s.targets.join(', ')})` : ''),
            Status: (s) => (s.status === 'open' ? 'open' : `closed (${s.close_reason})`),
            'Opened by': (s) => s.opened_by,
            Opened: (s) => timeElement(s.opened_at),
            'To / from device': (s) => `${formatBytes(s.bytes_to_device)} / ${formatBytes(s.bytes_from_device)}`,
            '': (s) =>
              h(
                'span',
                { class: 'actions' },
                s.recording ? h('a', { class: 'button', href: `#/sessions/${s.session_id}/play` }, `Play (${Math.round(s.recording.duration_s)} s)`) : '',
                s.status === 'open' ? h('button', { type: 'button', 'data-close': s.session_id, onclick: () => void close(s) }, 'Close') : '',
              ),
          },
          'No sessions.',
        ),
      );
    } catch (err) {
      replace(list, errorBox((err as Error).message));
    }
  }

  async function close(s: Session): Promise<void> {
    try {
      await api('DELETE', `/v1/remote-access/sessions/${s.session_id}`);
      replace(news, `Closed ${s.session_id}.`);
    } catch (err) {
      replace(news, errorBox((err as Error).message));
    }
    await render();
  }

  status.addEventListener('change', () => void render());
  await render();
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Sessions opening and closing refresh the list (a burst, once).
  const stop = onLive((e) => {
    if (!e.event.startsWith('session.')) return;
    clearTimeout(timer);
    timer = setTimeout(() => void render(), 200);
  });
  return () => {
    stop();
    clearTimeout(timer);
  };
}
