/**
 * How a node may reach its cluster bus (docs/cluster.md, security): never without credentials
 * beyond loopback; on loopback without them, with a warning; a user and password in the URL are
 * used (the NATS client itself ignores them there, and reads a password of digits as a port).
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, metric, startNats } from '../helpers/cluster';
import { runTether, startServerProcess } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { systemProgram } from '../helpers/system-program';
import { waitFor } from '../helpers/wait';

const stops: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const stop of stops.reverse()) await stop();
});

describe('the bus a node may use', () => {
  it('a bus beyond loopback without credentials is refused at start, by the server and by a broker node', async () => {
    // Not a loopback name, so refused; were it dialled anyway (a regression), 0.0.0.0 reaches this machine only.
    const env = { TETHER_NATS_URL: `nats://0.0.0.0:${await freePort()}`, TETHER_LISTEN: '127.0.0.1:0', TETHER_DATA_DIR: tempDir() };
    const server = await runTether(['server'], env);
    expect(server.code).toBe(2);
    expect(server.stderr).toMatch(/TETHER_NATS_URL: a bus without credentials is open to whoever reaches it.*TETHER_NATS_CREDS/);
    const broker = await runTether(['broker'], { ...env, TETHER_PUBLIC_URL: 'http://127.0.0.1:1' });
    expect(broker.code).toBe(2);
    expect(broker.stderr).toMatch(/TETHER_NATS_CREDS/);
  });

  it('a bus on loopback without credentials is used, with a warning that it is open to every local user', async () => {
    const nats = await startNats({ open: true });
    stops.push(() => nats.stop());
    const node = await startServerProcess(tempDir(), { TETHER_NATS_URL: nats.url });
    stops.push(() => node.proc.stop());
    await waitFor(async () => ((await metric(node.url, 'tether_cluster_bus_up')) === 1 ? true : undefined), 'the bus up', 10_000);
    expect(node.proc.stderr.some((l) => l.includes('the cluster bus has no credentials'))).toBe(true);
  });

  it('the user and password of the URL authenticate the node, a password beginning with digits too', async () => {
    const bin = systemProgram(['/usr/sbin/nats-server', '/usr/bin/nats-server'], 'nats-server', 'the cluster tests');
    const port = await freePort();
    const child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port), '--user', 'tether', '--pass', '4222s3cret'], { stdio: ['ignore', 'ignore', 'pipe'] });
    stops.push(() => void child.kill('SIGKILL'));
    let log = '';
    child.stderr!.on('data', (c: Buffer) => (log += c.toString()));
    await waitFor(() => (/Server is ready/.test(log) ? true : undefined), 'nats-server ready', 10_000);
    const node = await startServerProcess(tempDir(), { TETHER_NATS_URL: `nats://tether:4222s3cret@127.0.0.1:${port}` });
    stops.push(() => node.proc.stop());
    await waitFor(async () => ((await metric(node.url, 'tether_cluster_bus_up')) === 1 ? true : undefined), 'the bus up', 10_000);
    expect(node.proc.stderr.some((l) => l.includes('the cluster bus has no credentials'))).toBe(false);
    // The password is never logged.
    expect([...node.proc.stdout, ...node.proc.stderr].join('\n')).not.toContain('4222s3cret');
  });
});
