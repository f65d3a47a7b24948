/**
 * @module Section `cluster` (docs/cluster.md): a nats-server, a control node and three edges on
 * this machine. A copy through a cluster stream (agent on edge A, client on edge B: the agent
 * dials B) beside one through a single process without NATS, interleaved; then agents across
 * the four nodes (light clients of the agent protocol, and real agents on the edge that will
 * be killed), the presence writes the control node sustains while they connect, and the time
 * until the killed edge's agents are back online elsewhere, with the spread of their reconnections.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { systemProgram } from '../test/helpers/system-program';
import { helper, type Helper } from './helpers';
import { call, median, percentile, processStats, round, startServer, stopChild, tempDir, TETHER, type Result, type ServerProcess } from './lib';

const MiB = 1024 * 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ClusterPlan {
  /** Agents online at once across the four nodes. */
  agents: number;
  /** Of them, the real agents on the edge that is killed. */
  killed: number;
  bytes: number;
  repeats: number;
  /** Of every node (a quick run shortens it, so that the deadline passes soon). */
  heartbeatMs: number;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

async function startNats(): Promise<{ url: string; child: ChildProcess }> {
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

interface Edge {
  url: string;
  child: ChildProcess;
}

async function startEdge(natsUrl: string, heartbeatMs: number, nodeFlags: string[] = []): Promise<Edge> {
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

async function metric(nodeUrl: string, name: string): Promise<number> {
  const text = await (await fetch(`${nodeUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

/** Devices online as the API lists them (120 lists a minute per user: a 429 waits its Retry-After). */
async function onlineInApi(control: ServerProcess): Promise<number> {
  for (;;) {
    const res = await call(`${control.url}/v1/devices?agent_status=online&per_page=1`, 'GET', control.token);
    if (res.status === 200) return res.body.meta.total as number;
    if (res.status !== 429) throw new Error(`GET /v1/devices: ${res.status} ${JSON.stringify(res.body)}`);
    await sleep(1000);
  }
}

async function register(control: ServerProcess, prefix: string, count: number): Promise<Array<{ id: string; token: string }>> {
  const devices: Array<{ id: string; token: string }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const id = `${prefix}-${next++}`;
        const res = await call(`${control.url}/v1/devices`, 'POST', control.token, { device_id: id });
        devices.push({ id, token: res.body.data.agent_token });
      }
    }),
  );
  return devices;
}

/**
 * One copy: a `stream-agent` on `agentNode` sends `bytes`, a sink on `clientNode` takes them;
 * MiB/s, and the CPU seconds the relaying process (`relayPid`) spent on it.
 */
async function copy(control: ServerProcess, agentNode: string, clientNode: string, bytes: number, deviceId: string, relayPid: number): Promise<{ rate: number; cpu: number }> {
  const created = await call(`${control.url}/v1/devices`, 'POST', control.token, { device_id: deviceId });
  const agent = helper(['stream-agent', agentNode, deviceId, created.body.data.agent_token, String(bytes)]);
  try {
    await agent.next();
    while ((await call(`${control.url}/v1/devices/${deviceId}/agent-status`, 'GET', control.token)).body.data.agent_status !== 'online') await sleep(20);
    const session = await call(`${control.url}/v1/remote-access/sessions`, 'POST', control.token, { device_id: deviceId, protocol: 'file-transfer' });
    if (session.status !== 201) throw new Error(`session: ${JSON.stringify(session.body)}`);
    const ws = new URL(session.body.data.websocket_url);
    ws.host = new URL(clientNode).host;
    const sink = helper(['sink', ws.toString(), String(bytes)]);
    try {
      await sink.next(); // open
      const cpu0 = processStats(relayPid).cpuSeconds;
      const { seconds } = await sink.next();
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
const YOUNG_GENERATION = ['--min-semi-space-size=16'];

/**
 * Copies through the cluster (a stream-agent on `a`, a sink on `b`) and through a single process
 * started with the same node options, interleaved; their rates, ratio and relaying CPU.
 */
async function copies(control: ServerProcess, a: Edge, b: Edge, plan: ClusterPlan, kind: 'default' | 'tuned'): Promise<Result[]> {
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
    { section: 'cluster', name: `${how}: copy ${label} through one process (no NATS)`, value: round(singleRate, 0), unit: 'MiB/s', target: 'reported', met: null },
    { section: 'cluster', name: `${how}: copy ${label} through the cluster (agent on A, client on B)`, value: round(clusterRate, 0), unit: 'MiB/s', target: 'reported', met: null },
    kind === 'tuned'
      ? { section: 'cluster', name: `${how}: cluster / single process`, value: round(clusterRate / singleRate, 2), unit: 'x', target: '>= 0.95', met: clusterRate / singleRate >= 0.95 }
      : { section: 'cluster', name: `${how}: cluster / single process`, value: round(clusterRate / singleRate, 2), unit: 'x', target: 'reported', met: null },
    { section: 'cluster', name: `${how}: relaying CPU per GiB, single process`, value: round(median(singleRuns.map((r) => r.cpu)) / gib, 2), unit: 's', target: 'reported', met: null },
    { section: 'cluster', name: `${how}: relaying CPU per GiB, edge`, value: round(median(clusterRuns.map((r) => r.cpu)) / gib, 2), unit: 's', target: 'reported', met: null },
  ];
}

export async function clusterBench(plan: ClusterPlan): Promise<Result[]> {
  const results: Result[] = [];
  const nats = await startNats();
  const control = await startServer({ TETHER_NATS_URL: nats.url, TETHER_HEARTBEAT_MS: String(plan.heartbeatMs) });
  const edges: Edge[] = [];
  const helpers: Helper[] = [];
  try {
    for (let i = 0; i < 3; i++) edges.push(await startEdge(nats.url, plan.heartbeatMs));
    const [a, b, c] = edges as [Edge, Edge, Edge];

    // 1. A copy through the cluster (agent on A, client on B) beside one through a single process;
    // then the same with both relaying processes started with a young generation of 16 MiB
    // semi-spaces (V8 sizes it by each process's history: see BENCHMARKS.md, issue 18).
    results.push(...(await copies(control, a, b, plan, 'default')));
    const tuned = await startEdge(nats.url, plan.heartbeatMs, YOUNG_GENERATION);
    try {
      results.push(...(await copies(control, a, tuned, plan, 'tuned')));
    } finally {
      await stopChild(tuned.child);
    }

    if (plan.agents === 0) return results;

    // 2. Agents across the four nodes: light ones on control, A and B; real ones on C (they fail over).
    const light = plan.agents - plan.killed;
    const dir = tempDir('tether-bench-cluster-');
    const t0 = performance.now();
    const realDevices = await register(control, 'real', plan.killed);
    const lightDevices = await register(control, 'light', light);
    const registerSeconds = (performance.now() - t0) / 1000;
    const writesBefore = await metric(control.url, 'tether_cluster_presence_writes_total');
    const writeSamples: Array<{ at: number; writes: number }> = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        writeSamples.push({ at: performance.now(), writes: await metric(control.url, 'tether_cluster_presence_writes_total') });
        await sleep(250);
      }
    })();
    const connectStart = performance.now();
    // The real agents know every node, and start on C (the first). Each holds its upload journal
    // open besides its socket: two processes, so that neither passes its 20,000 open files.
    // Their events as they come: first connections, and reconnections by device and time.
    let realConnected = 0;
    const realBack = new Map<string, number>();
    let killedAt = Number.POSITIVE_INFINITY;
    const onReal = (msg: { event: string; device?: string; at?: number }) => {
      if (msg.event === 'all-connected') realConnected++;
      else if (msg.event === 'reconnected' && msg.at! >= killedAt && !realBack.has(msg.device!)) realBack.set(msg.device!, msg.at! - killedAt);
    };
    let lightDropped = 0;
    const onLight = (msg: { event: string }) => {
      if (msg.event === 'dropped') lightDropped++;
    };
    const targets = [control.url, a.url, b.url];
    const lightHelpers: Helper[] = [];
    for (let i = 0; i < targets.length; i++) {
      const part = lightDevices.filter((_, j) => j % targets.length === i);
      const file = join(dir, `light-${i}.json`);
      writeFileSync(file, JSON.stringify(part));
      lightHelpers.push(helper(['agents', targets[i]!, file], onLight));
    }
    helpers.push(...lightHelpers);
    const lightReports = await Promise.all(lightHelpers.map((h) => h.next()));
    // Then the real agents, onto C.
    const realHelpers: Helper[] = [];
    for (let i = 0; i < 2; i++) {
      const file = join(dir, `real-${i}.json`);
      writeFileSync(file, JSON.stringify(realDevices.filter((_, j) => j % 2 === i)));
      realHelpers.push(helper(['real-agents', [c.url, control.url, a.url, b.url].join(','), file, join(dir, `state-${i}`)], onReal));
    }
    helpers.push(...realHelpers);
    const realBy = performance.now() + 180_000;
    while (realConnected < realHelpers.length && performance.now() < realBy) await sleep(250);
    if (realConnected < realHelpers.length) console.error('real agents: not all connected within 180 s');
    let online = 0;
    const allOnlineBy = performance.now() + 120_000;
    while ((online = await onlineInApi(control)) < plan.agents && performance.now() < allOnlineBy) await sleep(1000);
    const connectSeconds = (performance.now() - connectStart) / 1000;
    sampling = false;
    await sampler;
    const writes = (await metric(control.url, 'tether_cluster_presence_writes_total')) - writesBefore;
    let peak = 0;
    for (let i = 4; i < writeSamples.length; i++) {
      const from = writeSamples[i - 4]!;
      const to = writeSamples[i]!;
      peak = Math.max(peak, (to.writes - from.writes) / ((to.at - from.at) / 1000));
    }
    const failed = lightReports.reduce((sum, r) => sum + r.failed, 0);
    const perNode = await Promise.all([control.url, a.url, b.url, c.url].map((u) => metric(u, 'tether_agents_online')));
    const connected = perNode.reduce((x, y) => x + y, 0);
    if (online < plan.agents) {
      const offline = await call(`${control.url}/v1/devices?agent_status=offline&per_page=20`, 'GET', control.token);
      console.error(`connected to the nodes: ${connected}; online in the API: ${online}; offline, e.g.: ${offline.body.data?.map((d: { device_id: string }) => d.device_id).join(' ')}`);
    }
    results.push(
      { section: 'cluster', name: 'devices registered (API, 32 at once)', value: round(registerSeconds, 1), unit: 's', target: 'reported', met: null },
      { section: 'cluster', name: 'agents online at once (control + 3 edges)', value: online, unit: 'agents', target: `>= ${plan.agents}`, met: online >= plan.agents },
      { section: 'cluster', name: 'agents on the busiest node', value: Math.max(...perNode), unit: 'agents', target: 'reported', met: null },
      { section: 'cluster', name: 'agents connected, by the nodes\' own count', value: connected, unit: 'agents', target: 'reported', met: null },
      { section: 'cluster', name: 'connections refused or failed', value: failed, unit: 'agents', target: 'reported', met: null },
      { section: 'cluster', name: 'light agents dropped by a node (pong too late) and reconnected', value: lightDropped, unit: 'agents', target: 'reported', met: null },
      { section: 'cluster', name: 'time until all are online in the API', value: round(connectSeconds, 1), unit: 's', target: 'reported', met: null },
      { section: 'cluster', name: 'presence writes, average while they connect', value: round(writes / connectSeconds, 0), unit: 'writes/s', target: 'reported', met: null },
      { section: 'cluster', name: 'presence writes, best second', value: round(peak, 0), unit: 'writes/s', target: 'reported', met: null },
    );

    // 3. SIGKILL of edge C: its real agents reconnect elsewhere (backoff with full jitter, another server at random).
    let lowest = online;
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        lowest = Math.min(lowest, await onlineInApi(control));
        await sleep(1000);
      }
    })();
    // The real agents all start on C; those a drop moved elsewhere before the kill do not move again.
    const onC = await metric(c.url, 'tether_agents_online');
    killedAt = Date.now();
    c.child.kill('SIGKILL');
    const giveUp = Date.now() + 120_000;
    while (realBack.size < onC && Date.now() < giveUp) await sleep(250);
    const reconnected = [...realBack.values()];
    // Everyone back, and the control node has given C up (its agents that did not come back would be offline now).
    while ((await metric(control.url, 'tether_cluster_nodes')) > 3 && Date.now() < giveUp) await sleep(250);
    watching = false;
    await watcher;
    const after = await onlineInApi(control);
    reconnected.sort((x, y) => x - y);
    const allBack = reconnected.length >= onC ? reconnected[onC - 1]! / 1000 : Number.NaN;
    if (reconnected.length < onC) console.error(`only ${reconnected.length} of the ${onC} agents of the killed edge came back within 120 s`);
    const perNodeAfter = await Promise.all([control.url, a.url, b.url].map((u) => metric(u, 'tether_agents_online')));
    results.push(
      { section: 'cluster', name: 'real agents on the edge that is killed', value: onC, unit: 'agents', target: `>= ${plan.killed}`, met: onC >= plan.killed },
      { section: 'cluster', name: 'after SIGKILL of that edge: all of them online elsewhere', value: round(allBack, 1), unit: 's', target: '<= 30', met: allBack <= 30 },
      { section: 'cluster', name: 'their reconnections after the kill, p50', value: round(percentile(reconnected, 50) / 1000, 1), unit: 's', target: 'reported', met: null },
      { section: 'cluster', name: 'their reconnections after the kill, p90', value: round(percentile(reconnected, 90) / 1000, 1), unit: 's', target: 'reported', met: null },
      { section: 'cluster', name: 'fewest online in the API during the failover', value: lowest, unit: 'agents', target: `= ${plan.agents} (none shown offline)`, met: lowest >= plan.agents },
      { section: 'cluster', name: 'online in the API after the failover', value: after, unit: 'agents', target: `= ${plan.agents}`, met: after === plan.agents },
      { section: 'cluster', name: 'agents on the busiest node after', value: Math.max(...perNodeAfter), unit: 'agents', target: 'reported', met: null },
    );
    return results;
  } finally {
    await Promise.all(helpers.map((h) => h.stop()));
    await Promise.all(edges.map((e) => stopChild(e.child)));
    await control.stop();
    await stopChild(nats.child);
  }
}
