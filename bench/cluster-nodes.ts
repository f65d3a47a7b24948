/**
 * @module The nodes of the cluster benchmark (docs/cluster.md), as processes on this machine: a
 * nats-server, edges (`tether broker`) on free ports, and what the benchmark asks of them: a
 * metric, the devices online in the API, devices registered 32 at once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Device, DeviceCreated } from '../shared/api/devices';
import { call, TETHER, type Data, type Page, type ServerProcess } from './lib';
import { systemProgram } from './system-program';
import { freePort } from './free-port';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function startNats(): Promise<{ url: string; child: ChildProcess }> {
  const bin = systemProgram(['/usr/sbin/nats-server', '/usr/bin/nats-server'], 'nats-server', 'the cluster benchmark');
  const port = await freePort();
  const child = spawn(bin, ['-a', '127.0.0.1', '-p', String(port)], { stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let log = '';
    child.stderr!.on('data', (c: Buffer) => {
      log += c.toString();
      if (log.includes('Server is ready')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`nats-server exited ${code}: ${log.slice(-300)}`)));
  });
  return { url: `nats://127.0.0.1:${port}`, child };
}

export interface Edge {
  url: string;
  child: ChildProcess;
}

export async function startEdge(natsUrl: string, heartbeatMs: number, nodeFlags: string[] = []): Promise<Edge> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [...nodeFlags, TETHER, 'broker'], {
    env: {
      ...process.env,
      TETHER_NATS_URL: natsUrl,
      TETHER_LISTEN: `127.0.0.1:${port}`,
      TETHER_PUBLIC_URL: url,
      TETHER_LOG_LEVEL: 'warn',
      TETHER_HEARTBEAT_MS: String(heartbeatMs),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('tether broker listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`tether broker exited ${code}`)));
  });
  for (;;) {
    if ((await fetch(`${url}/readyz`)).status === 200) return { url, child };
    await sleep(50);
  }
}

export async function metric(nodeUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${nodeUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

/** Devices online as the API lists them (120 lists a minute per user: a 429 waits its Retry-After). */
export async function onlineInApi(control: ServerProcess): Promise<number> {
  for (;;) {
    const res = await call<Page<Device>>(`${control.url}/v1/devices?agent_status=online&per_page=1`, 'GET', control.token);
    if (res.status === 200) return res.body.meta.total;
    if (res.status !== 429) throw new Error(`GET /v1/devices: ${res.status} ${JSON.stringify(res.body)}`);
    await sleep(1000);
  }
}

export async function register(control: ServerProcess, prefix: string, count: number): Promise<Array<{ id: string; token: string }>> {
  const devices: Array<{ id: string; token: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const id = `${prefix}-${next++}`;
        const res = await call<Data<DeviceCreated>>(`${control.url}/v1/devices`, 'POST', control.token, { device_id: id });
        devices.push({ id, token: res.body.data.agent_token });
      }
    }),
  );
  return devices;
}
