/**
 * @module The cluster benchmark's copies: the same bytes through a cluster stream (agent on edge A,
 * client on edge B: the agent dials B) and through a single process without NATS, interleaved,
 * with the CPU the relaying process spends on them.
 */
import { sleep, type Edge } from './cluster-nodes';
import type { AgentStatusView, DeviceCreated } from '../shared/api/devices';
import type { Session } from '../shared/api/sessions';
import { helper, type Transferred } from './helpers';
import { call, median, processStats, round, startServer, type Data, type Result, type ServerProcess } from './lib';

const MiB = 1024 * 1024;

/**
 * One copy: a `stream-agent` on `agentNode` sends `bytes`, a sink on `clientNode` takes them;
 * MiB/s, and the CPU seconds the relaying process (`relayPid`) spent on it.
 */
async function copy(
  control: ServerProcess,
  agentNode: string,
  clientNode: string,
  bytes: number,
  deviceId: string,
  relayPid: number,
): Promise<{ rate: number; cpu: number }> {
  const created = await call<Data<DeviceCreated>>(`${control.url}/v1/devices`, 'POST', control.token, { device_id: deviceId });
  const agent = helper(['stream-agent', agentNode, deviceId, created.body.data.agent_token, String(bytes)]);
  try {
    await agent.next();
    while ((await call<Data<AgentStatusView>>(`${control.url}/v1/devices/${deviceId}/agent-status`, 'GET', control.token)).body.data.agent_status !== 'online')
      await sleep(20);
    const session = await call<Data<Session>>(`${control.url}/v1/remote-access/sessions`, 'POST', control.token, {
      device_id: deviceId,
      protocol: 'file-transfer',
    });
    if (session.status !== 201) throw new Error(`session: ${JSON.stringify(session.body)}`);
    const ws = new URL(session.body.data.websocket_url!);
    ws.host = new URL(clientNode).host;
    const sink = helper(['sink', ws.toString(), String(bytes)]);
    try {
      await sink.next(); // open
      const cpu0 = processStats(relayPid).cpuSeconds;
      const { seconds } = await sink.next<Transferred>();
      return { rate: bytes / MiB / seconds, cpu: processStats(relayPid).cpuSeconds - cpu0 };
    } finally {
      await sink.stop();
      await call(`${control.url}/v1/remote-access/sessions/${session.body.data.session_id}`, 'DELETE', control.token);
    }
  } finally {
    await agent.stop();
  }
}

/** Node options of the tuned runs: the young generation at 16 MiB semi-spaces from the start. */
export const YOUNG_GENERATION = ['--min-semi-space-size=16'];

/**
 * Copies through the cluster (a stream-agent on `a`, a sink on `b`) and through a single process
 * started with the same node options, interleaved; their rates, ratio and relaying CPU.
 */
export async function copies(control: ServerProcess, a: Edge, b: Edge, plan: { bytes: number; repeats: number }, kind: 'default' | 'tuned'): Promise<Result[]> {
  const single = await startServer({}, kind === 'tuned' ? YOUNG_GENERATION : []);
  const singleRuns: Array<{ rate: number; cpu: number }> = [];
  const clusterRuns: Array<{ rate: number; cpu: number }> = [];
  try {
    for (let i = 0; i < plan.repeats; i++) {
      singleRuns.push(await copy(single, single.url, single.url, plan.bytes, `copy-${kind}-single-${i}`, single.pid));
      clusterRuns.push(await copy(control, a.url, b.url, plan.bytes, `copy-${kind}-cluster-${i}`, b.child.pid!));
    }
  } finally {
    await single.stop();
  }
  const singleRate = median(singleRuns.map((r) => r.rate));
  const clusterRate = median(clusterRuns.map((r) => r.rate));
  const gib = plan.bytes / (1024 * MiB);
  const label = `${round(plan.bytes / MiB, 0)} MiB`;
  const how = kind === 'default' ? 'nodes as started by default' : 'both started with --min-semi-space-size=16';
  return [
    {
      section: 'cluster',
      name: `${how}: copy ${label} through one process (no NATS)`,
      value: round(singleRate, 0),
      unit: 'MiB/s',
      target: 'reported',
      met: null,
    },
    {
      section: 'cluster',
      name: `${how}: copy ${label} through the cluster (agent on A, client on B)`,
      value: round(clusterRate, 0),
      unit: 'MiB/s',
      target: 'reported',
      met: null,
    },
    kind === 'tuned'
      ? {
          section: 'cluster',
          name: `${how}: cluster / single process`,
          value: round(clusterRate / singleRate, 2),
          unit: 'x',
          target: '>= 0.95',
          met: clusterRate / singleRate >= 0.95,
        }
      : { section: 'cluster', name: `${how}: cluster / single process`, value: round(clusterRate / singleRate, 2), unit: 'x', target: 'reported', met: null },
    {
      section: 'cluster',
      name: `${how}: relaying CPU per GiB, single process`,
      value: round(median(singleRuns.map((r) => r.cpu)) / gib, 2),
      unit: 's',
      target: 'reported',
      met: null,
    },
    {
      section: 'cluster',
      name: `${how}: relaying CPU per GiB, edge`,
      value: round(median(clusterRuns.map((r) => r.cpu)) / gib, 2),
      unit: 's',
      target: 'reported',
      met: null,
    },
  ];
}
