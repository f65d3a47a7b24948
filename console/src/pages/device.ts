/**
 * @module One device: its diagnostics summary (system, load, memory, disks, interfaces, top
 * processes, a log's tail) through a diagnostics session that closes when you leave, and the
 * ways in that the user's role may use: a shell, its files, and the command line of a port
 * forward; for administrators, a new agent token and removal.
 */
import type { Device } from '../../../shared/api/devices';
import type { DiskUsage, LogTail, NetworkInterfaces, ProcessList, SystemInfo, SystemMetrics } from '../../../shared/protocol/diagnostics';
import { api } from '../api';
import { currentUser } from '../auth';
import { errorBox, formatBytes, h, replace, table } from '../dom';
import { onLive } from '../events';
import { timeElement } from '../format';
import type { Cleanup } from '../page';
import { isAdmin, mayOpen } from '../roles';
import { askInPage, openSession, SessionStream } from '../session-stream';
import { accessNotice, accessRefusal } from './access/device-notice';
import { deviceAdmin } from './device/admin';

export async function devicePage(root: HTMLElement, [id]: string[]): Promise<Cleanup> {
  const device = await api<Device>('GET', `/v1/devices/${encodeURIComponent(id!)}`);
  const status = h('span', { class: `status ${device.agent_status}`, id: 'device-status-badge' }, device.agent_status);
  const seen = h('span', { class: 'muted' }, 'last seen ', timeElement(device.last_seen_at));
  const me = currentUser();
  const summary = h('section', { id: 'diagnostics', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Reading diagnostics…'));
  const forwardLine = `tether forward ${device.device_id} 8080:127.0.0.1:80`;
  const forwardBox = h('code', { id: 'forward-command' }, forwardLine);
  const actions = h(
    'div',
    { class: 'actions' },
    mayOpen(me, 'shell') && h('a', { class: 'button', href: `#/terminal/${encodeURIComponent(device.device_id)}`, id: 'open-shell' }, 'Open a shell'),
    mayOpen(me, 'file-transfer') && h('a', { class: 'button', href: `#/files/${encodeURIComponent(device.device_id)}`, id: 'open-files' }, 'Files'),
    mayOpen(me, 'port-forward') &&
      h(
        'button',
        {
          type: 'button',
          id: 'show-forward',
          onclick: () => {
            forward.hidden = !forward.hidden;
          },
        },
        'Port forward…',
      ),
  );
  const forward = h(
    'div',
    { class: 'card', hidden: true },
    h(
      'p',
      {},
      'Run on your computer, then connect to 127.0.0.1:8080 (change the ports and the target as you need; the device allows ',
      (device.forward_allow ?? ['nothing']).join(', '),
      '):',
    ),
    h('div', { class: 'actions' }, forwardBox, h('button', { type: 'button', onclick: () => void navigator.clipboard?.writeText(forwardLine) }, 'Copy')),
  );
  // Shell and files on a device a policy protects need an approved request: said before they are tried.
  const access = accessNotice(device, me);
  replace(
    root,
    h('h1', {}, device.device_id, ' ', status),
    h('p', {}, seen, device.agent_version ? ` · agent ${device.agent_version}` : ''),
    access.element,
    actions,
    forward,
    isAdmin(me) && deviceAdmin(device.device_id),
    summary,
  );

  const stop = onLive((e) => {
    if ((e.event !== 'agent.online' && e.event !== 'agent.offline') || e.data.device_id !== device.device_id) return;
    const state = e.event === 'agent.online' ? 'online' : 'offline';
    status.className = `status ${state}`;
    replace(status, state);
    replace(seen, 'last seen ', timeElement(e.data.at));
  });
  let stream: SessionStream | undefined;
  let sessionId: string | undefined;
  const done = () => {
    stop();
    access.stop();
    stream?.close();
    if (sessionId) void api('DELETE', `/v1/remote-access/sessions/${sessionId}`).catch(() => {});
  };
  if (device.agent_status !== 'online') {
    replace(summary, h('p', { class: 'muted' }, 'The agent is offline: no diagnostics.'));
    return done;
  }
  void (async () => {
    try {
      const session = await openSession(device.device_id, 'diagnostics', askInPage(summary, device.device_id, 'diagnostics'));
      sessionId = session.session_id;
      stream = new SessionStream(session.websocket_url!);
      await stream.opened;
      const [info, metrics, disks, nets, procs] = await Promise.all([
        stream.call<SystemInfo>('system.info'),
        stream.call<SystemMetrics>('system.metrics'),
        stream.call<DiskUsage>('disk.usage'),
        stream.call<NetworkInterfaces>('network.interfaces'),
        stream.call<ProcessList>('process.list', { limit: 10 }),
      ]);
      const logPath = h('input', { id: 'log-path', value: '/var/log/syslog', 'aria-label': 'Log file' });
      const logOut = h('pre', { id: 'log-tail', class: 'log' });
      const readLog = async () => {
        try {
          const tail = await stream!.call<LogTail>('log.tail', { path: logPath.value, lines: 50 });
          replace(logOut, tail.lines.join('\n') || '(empty)');
        } catch (err) {
          replace(logOut, (err as Error).message);
        }
      };
      replace(
        summary,
        h('h2', {}, 'System'),
        h(
          'dl',
          { class: 'facts' },
          h('dt', {}, 'Host'),
          h('dd', {}, info.hostname),
          h('dt', {}, 'OS'),
          h('dd', {}, `${info.os} ${info.kernel} (${info.arch})`),
          h('dt', {}, 'CPUs'),
          h('dd', {}, `${info.cpus.count} × ${info.cpus.model}`),
          h('dt', {}, 'Up'),
          h('dd', {}, `${Math.floor(info.uptime_s / 3600)} h`),
          h('dt', {}, 'Load'),
          h('dd', {}, `${metrics.loadavg.map((l) => l.toFixed(2)).join(' ')} · CPU ${metrics.cpu_percent}%`),
          h('dt', {}, 'Memory'),
          h('dd', {}, `${formatBytes(metrics.mem_used_bytes)} used of ${formatBytes(metrics.mem_total_bytes)}`),
        ),
        h('h2', {}, 'Disks'),
        table(
          disks.mounts,
          { Mount: (d) => d.mount, Size: (d) => formatBytes(d.total_bytes), Used: (d) => formatBytes(d.used_bytes), Free: (d) => formatBytes(d.free_bytes) },
          'No disks.',
        ),
        h('h2', {}, 'Interfaces'),
        table(
          nets.interfaces,
          {
            Name: (n) => n.name,
            Addresses: (n) => n.addresses.map((a) => a.cidr ?? a.address).join(', '),
            MAC: (n) => n.mac ?? '',
            'RX / TX': (n) => `${formatBytes(n.rx_bytes ?? 0)} / ${formatBytes(n.tx_bytes ?? 0)}`,
          },
          'No interfaces.',
        ),
        h('h2', {}, 'Top processes'),
        table(
          procs.processes,
          {
            PID: (p) => p.pid,
            User: (p) => p.user,
            'CPU %': (p) => p.cpu,
            RSS: (p) => formatBytes(p.rss),
            Command: (p) => h('span', { class: 'cmd', title: p.command }, p.command),
          },
          'No processes.',
        ),
        h('h2', {}, 'Log'),
        h('form', { class: 'filters', onsubmit: (e: Event) => (e.preventDefault(), void readLog()) }, logPath, h('button', { type: 'submit' }, 'Tail')),
        logOut,
      );
      void readLog();
    } catch (err) {
      replace(summary, accessRefusal(err, device.device_id, 'diagnostics') ?? errorBox(`Diagnostics: ${(err as Error).message}`));
    }
  })();
  return done;
}
