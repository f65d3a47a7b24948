import { describe, expect, it } from 'vitest';
import { describe as describeResults } from '../../../../cli/commands/diag';

describe('diag summary text', () => {
  it('writes the system line and the tables of disks, interfaces and processes', () => {
    const text = describeResults({
      'system.info': {
        hostname: 'h',
        os: 'Linux',
        kernel: '6.1',
        arch: 'x64',
        cpus: { count: 2, model: 'cpu' },
        uptime_s: 3700,
        agent_version: '0.1.0',
      },
      'disk.usage': { mounts: [{ mount: '/', device: '/dev/sda1', fstype: 'ext4', total_bytes: 4096, used_bytes: 1024, free_bytes: 3072 }] },
      'network.interfaces': {
        interfaces: [
          {
            name: 'lo',
            addresses: [{ address: '127.0.0.1', family: 'IPv4', netmask: '255.0.0.0', cidr: '127.0.0.1/8', internal: true }],
            mac: '00:00',
            rx_bytes: null,
            tx_bytes: 2048,
          },
        ],
      },
      'process.list': { total: 5, processes: [{ pid: 1, ppid: 0, user: 'root', cpu: 0.5, rss: 1024, command: 'init' }] },
    });
    expect(text).toContain('h: Linux, 6.1, x64, 2 CPU (cpu), up 1h01m, agent 0.1.0\n');
    expect(text).toMatch(/DISKS\nMOUNT +TYPE +SIZE +USED +FREE +USE%\n\/ +ext4 +4\.0 KiB +1\.0 KiB +3\.0 KiB +25%/);
    expect(text).toMatch(/INTERFACES\nNAME +ADDRESSES +MAC +RX +TX\nlo +127\.0\.0\.1\/8 +00:00 +- +2\.0 KiB/);
    expect(text).toContain('PROCESSES (1 of 5, by CPU)');
  });

  it('says when a log tail was cut to fit one reply', () => {
    expect(describeResults({ 'log.tail': { path: '/var/log/syslog', lines: ['a', 'b'], truncated: false } })).toBe('a\nb\n');
    expect(describeResults({ 'log.tail': { path: '/var/log/syslog', lines: ['b'], truncated: true } })).toBe(
      '(only the newest 1 lines fit in one reply; older ones were left out)\nb\n',
    );
  });
});
