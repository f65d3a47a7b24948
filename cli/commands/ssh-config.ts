/**
 * @module `tether ssh-config [DEVICE...]`: `Host` blocks for ~/.ssh/config that reach each
 * device's own sshd through `tether forward --stdio`, so `ssh DEVICE`, `scp`, `rsync`, Ansible
 * and VS Code Remote work as with any host (docs/ssh.md). Every device the caller can see when
 * none is named. Known host keys are kept per device (`HostKeyAlias`), since every device's sshd
 * is reached at the same address, its own loopback.
 */
import { allPages } from '../api-client';
import type { Device } from '../../shared/api/devices';
import { canonicalHost } from '../../shared/protocol/port-forward/targets';
import type { Context } from '../context';
import { usageError } from '../errors';
import { selfCommand, shellQuote } from './self-command';

export interface SshConfigFlags {
  /** The login name on the devices. */
  user?: string;
  /** The port of the devices' sshd (default 22). */
  port?: number;
  /** The host the device's agent connects to for sshd (default 127.0.0.1). */
  host?: string;
  /** Put before each device id in `Host`: `tether-` gives `ssh tether-laptop`. */
  prefix?: string;
  /** `--ttl` of the sessions the ProxyCommand opens. */
  ttl?: number;
}

/** What ssh_config accepts as a host pattern or value without quoting. */
const CONFIG_WORD = /^[A-Za-z0-9._@-]+$/;

async function allDevices(ctx: Context): Promise<string[]> {
  const devices = await allPages<Device>(ctx.api(), (paging) => `/v1/devices?${new URLSearchParams(paging)}`);
  return devices.map((d) => d.device_id);
}

/** The ProxyCommand's words: this tether, ssh's `%` escaped (`%%`), each quoted for `sh -c`. */
function proxyCommand(flags: SshConfigFlags): string {
  const target = `${flags.host ?? '127.0.0.1'}:${flags.port ?? 22}`;
  const words = [...selfCommand().map((w) => shellQuote(w).replace(/%/g, '%%')), 'forward', '--stdio'];
  if (flags.ttl !== undefined) words.push('--ttl', String(flags.ttl));
  return [...words, '%h', target].join(' ');
}

export async function sshConfig(ctx: Context, devices: string[], flags: SshConfigFlags): Promise<void> {
  if (flags.host !== undefined && !canonicalHost(flags.host.replace(/^\[(.*)\]$/, '$1')))
    throw usageError(`--host ${flags.host}: not a host name or IP address`);
  if (flags.prefix !== undefined && !/^[A-Za-z0-9._-]*$/.test(flags.prefix)) throw usageError('--prefix takes letters, digits, ".", "_" and "-"');
  if (flags.user !== undefined && !CONFIG_WORD.test(flags.user)) throw usageError(`--user ${flags.user}: not a login name`);
  const ids = devices.length > 0 ? devices : await allDevices(ctx);
  const bad = ids.find((id) => !CONFIG_WORD.test(id));
  if (bad) throw usageError(`${bad}: not a device id ssh can take as a host name`);
  const command = proxyCommand(flags);
  const blocks = ids.map((id) =>
    [
      `Host ${flags.prefix ?? ''}${id}`,
      `  HostName ${id}`,
      ...(flags.user ? [`  User ${flags.user}`] : []),
      `  ProxyCommand ${command}`,
      // Every device's sshd is reached through its own loopback: its key is remembered by its id.
      `  HostKeyAlias ${id}`,
      '  CheckHostIP no',
    ].join('\n'),
  );
  if (blocks.length === 0) return ctx.notice('no devices: nothing to print (add one with `tether device add ID`)');
  ctx.out.stdout(`# ssh through tether (tether ssh-config); docs/ssh.md\n${blocks.join('\n\n')}\n`);
}
