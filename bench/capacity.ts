/**
 * @module Section 4: as many agents as the machine allows on one server process, each a light
 * client speaking the real agent protocol from a separate process and several 127.0.0.x source
 * addresses, with heartbeats on; the server's RSS per agent and its CPU per minute at idle.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Device, DeviceCreated } from '../shared/api/devices';
import { helper, type AgentsConnected } from './helpers';
import { call, processStats, round, tempDir, type Data, type Page, type Result, type ServerProcess } from './lib';

export async function capacityBench(server: ServerProcess, agents: number, idleSeconds: number): Promise<Result[]> {
  // Register the devices (concurrently: the server serialises the writes anyway).
  const devices: Array<{ id: string; token: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < agents) {
        const id = `swarm-${next++}`;
        const res = await call<Data<DeviceCreated>>(`${server.url}/v1/devices`, 'POST', server.token, { device_id: id });
        devices.push({ id, token: res.body.data.agent_token });
      }
    }),
  );
  const file = join(tempDir('tether-bench-swarm-'), 'devices.json');
  writeFileSync(file, JSON.stringify(devices));
  global.gc?.();
  await new Promise((r) => setTimeout(r, 500));
  const before = processStats(server.pid);
  const swarm = helper(['agents', server.url, file]);
  const t0 = performance.now();
  const { open, failed } = await swarm.next<AgentsConnected>();
  const connectSeconds = (performance.now() - t0) / 1000;
  try {
    // Let the connect burst settle, then watch the server idle with every agent connected.
    await new Promise((r) => setTimeout(r, 2000));
    const idleStart = processStats(server.pid);
    await new Promise((r) => setTimeout(r, idleSeconds * 1000));
    const idleEnd = processStats(server.pid);
    const online = (await call<Page<Device>>(`${server.url}/v1/devices?agent_status=online&per_page=1`, 'GET', server.token)).body.meta.total;
    const perAgent = (idleEnd.rss - before.rss) / Math.max(1, open);
    const cpuPerMinute = ((idleEnd.cpuSeconds - idleStart.cpuSeconds) / idleSeconds) * 60;
    return [
      { section: 'agents', name: 'agents connected to one server', value: open, unit: 'agents', target: '>= 15000', met: open >= 15000 },
      { section: 'agents', name: 'agents the API shows online', value: online, unit: 'agents', target: `= ${open}`, met: online === open },
      { section: 'agents', name: 'connections refused or failed', value: failed, unit: 'agents', target: 'reported', met: null },
      { section: 'agents', name: 'time to connect them all', value: round(connectSeconds, 1), unit: 's', target: 'reported', met: null },
      { section: 'agents', name: 'server RSS per agent', value: round(perAgent / 1024, 1), unit: 'KiB', target: '<= 10', met: perAgent <= 10 * 1024 },
      {
        section: 'agents',
        name: `server CPU at idle (${idleSeconds} s, heartbeats on)`,
        value: round(cpuPerMinute, 2),
        unit: 'CPU s/min',
        target: 'reported',
        met: null,
      },
    ];
  } finally {
    await swarm.stop();
  }
}
