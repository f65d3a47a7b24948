/**
 * @module Section `cluster` (docs/cluster.md): a nats-server, a control node and three edges on
 * this machine (./cluster-nodes). A copy through a cluster stream beside one through a single
 * process without NATS (./cluster-copies); then agents across the four nodes (light clients of the
 * agent protocol, and real agents on the edge that will be killed), the presence writes the
 * control node sustains while they connect, and the time until the killed edge's agents are back
 * online elsewhere, with the spread of their reconnections.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { copies, YOUNG_GENERATION } from './cluster-copies';
import { metric, onlineInApi, register, sleep, startEdge, startNats, type Edge } from './cluster-nodes';
import type { Device } from '../shared/api/devices';
import { helper, type AgentsConnected, type Helper } from './helpers';
import { call, percentile, round, startServer, stopChild, tempDir, type Page, type Result, type ServerProcess } from './lib';

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

/** The real agents' events as they come: helpers whose agents all connected, and reconnections after the kill. */
interface RealAgents {
  connected: number;
  /** By device: milliseconds from the kill until it was back. */
  back: Map<string, number>;
  killedAt: number;
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
    const real: RealAgents = { connected: 0, back: new Map(), killedAt: Number.POSITIVE_INFINITY };
    const online = await agentsAcross(control, edges as [Edge, Edge, Edge], plan, real, helpers, results);
    results.push(...(await killEdge(control, [a, b, c], plan, real, online)));
    return results;
  } finally {
    await Promise.all(helpers.map((h) => h.stop()));
    await Promise.all(edges.map((e) => stopChild(e.child)));
    await control.stop();
    await stopChild(nats.child);
  }
}

/**
 * 2. Agents across the four nodes: light ones on control, A and B; real ones on C (they fail
 * over). Returns how many are online in the API.
 */
async function agentsAcross(
  control: ServerProcess,
  [a, b, c]: [Edge, Edge, Edge],
  plan: ClusterPlan,
  real: RealAgents,
  helpers: Helper[],
  results: Result[],
): Promise<number> {
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
  const onReal = (msg: { event: string; device?: string; at?: number }) => {
    if (msg.event === 'all-connected') real.connected++;
    else if (msg.event === 'reconnected' && msg.at! >= real.killedAt && !real.back.has(msg.device!)) real.back.set(msg.device!, msg.at! - real.killedAt);
  };
  let lightDropped = 0;
  const onLight = (msg: { event: string }) => {
    if (msg.event === 'dropped') lightDropped++;
  };
  const targets = [control.url, a.url, b.url];
  const lightHelpers: Helper[] = [];
  for (let i = 0; i < targets.length; i++) {
    const file = join(dir, `light-${i}.json`);
    writeFileSync(file, JSON.stringify(lightDevices.filter((_, j) => j % targets.length === i)));
    lightHelpers.push(helper(['agents', targets[i]!, file], onLight));
  }
  helpers.push(...lightHelpers);
  const lightReports = await Promise.all(lightHelpers.map((h) => h.next<AgentsConnected>()));
  // Then the real agents, onto C.
  const realHelpers: Helper[] = [];
  for (let i = 0; i < 2; i++) {
    const file = join(dir, `real-${i}.json`);
    writeFileSync(file, JSON.stringify(realDevices.filter((_, j) => j % 2 === i)));
    realHelpers.push(helper(['real-agents', [c.url, control.url, a.url, b.url].join(','), file, join(dir, `state-${i}`)], onReal));
  }
  helpers.push(...realHelpers);
  const realBy = performance.now() + 180_000;
  while (real.connected < realHelpers.length && performance.now() < realBy) await sleep(250);
  if (real.connected < realHelpers.length) console.error('real agents: not all connected within 180 s');
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
    const offline = await call<Page<Device>>(`${control.url}/v1/devices?agent_status=offline&per_page=20`, 'GET', control.token);
    console.error(`connected to the nodes: ${connected}; online in the API: ${online}; offline, e.g.: ${offline.body.data?.map((d) => d.device_id).join(' ')}`);
  }
  results.push(
    { section: 'cluster', name: 'devices registered (API, 32 at once)', value: round(registerSeconds, 1), unit: 's', target: 'reported', met: null },
    {
      section: 'cluster',
      name: 'agents online at once (control + 3 edges)',
      value: online,
      unit: 'agents',
      target: `>= ${plan.agents}`,
      met: online >= plan.agents,
    },
    { section: 'cluster', name: 'agents on the busiest node', value: Math.max(...perNode), unit: 'agents', target: 'reported', met: null },
    { section: 'cluster', name: "agents connected, by the nodes' own count", value: connected, unit: 'agents', target: 'reported', met: null },
    { section: 'cluster', name: 'connections refused or failed', value: failed, unit: 'agents', target: 'reported', met: null },
    {
      section: 'cluster',
      name: 'light agents dropped by a node (pong too late) and reconnected',
      value: lightDropped,
      unit: 'agents',
      target: 'reported',
      met: null,
    },
    { section: 'cluster', name: 'time until all are online in the API', value: round(connectSeconds, 1), unit: 's', target: 'reported', met: null },
    {
      section: 'cluster',
      name: 'presence writes, average while they connect',
      value: round(writes / connectSeconds, 0),
      unit: 'writes/s',
      target: 'reported',
      met: null,
    },
    { section: 'cluster', name: 'presence writes, best second', value: round(peak, 0), unit: 'writes/s', target: 'reported', met: null },
  );
  return online;
}

/** 3. SIGKILL of edge C: its real agents reconnect elsewhere (backoff with full jitter, another server at random). */
async function killEdge(control: ServerProcess, [a, b, c]: [Edge, Edge, Edge], plan: ClusterPlan, real: RealAgents, online: number): Promise<Result[]> {
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
  real.killedAt = Date.now();
  c.child.kill('SIGKILL');
  const giveUp = Date.now() + 120_000;
  while (real.back.size < onC && Date.now() < giveUp) await sleep(250);
  const reconnected = [...real.back.values()];
  // Everyone back, and the control node has given C up (its agents that did not come back would be offline now).
  while ((await metric(control.url, 'tether_cluster_nodes')) > 3 && Date.now() < giveUp) await sleep(250);
  watching = false;
  await watcher;
  const after = await onlineInApi(control);
  reconnected.sort((x, y) => x - y);
  const allBack = reconnected.length >= onC ? reconnected[onC - 1]! / 1000 : Number.NaN;
  if (reconnected.length < onC) console.error(`only ${reconnected.length} of the ${onC} agents of the killed edge came back within 120 s`);
  const perNodeAfter = await Promise.all([control.url, a.url, b.url].map((u) => metric(u, 'tether_agents_online')));
  return [
    { section: 'cluster', name: 'real agents on the edge that is killed', value: onC, unit: 'agents', target: `>= ${plan.killed}`, met: onC >= plan.killed },
    {
      section: 'cluster',
      name: 'after SIGKILL of that edge: all of them online elsewhere',
      value: round(allBack, 1),
      unit: 's',
      target: '<= 30',
      met: allBack <= 30,
    },
    {
      section: 'cluster',
      name: 'their reconnections after the kill, p50',
      value: round(percentile(reconnected, 50) / 1000, 1),
      unit: 's',
      target: 'reported',
      met: null,
    },
    {
      section: 'cluster',
      name: 'their reconnections after the kill, p90',
      value: round(percentile(reconnected, 90) / 1000, 1),
      unit: 's',
      target: 'reported',
      met: null,
    },
    {
      section: 'cluster',
      name: 'fewest online in the API during the failover',
      value: lowest,
      unit: 'agents',
      target: `= ${plan.agents} (none shown offline)`,
      met: lowest >= plan.agents,
    },
    { section: 'cluster', name: 'online in the API after the failover', value: after, unit: 'agents', target: `= ${plan.agents}`, met: after === plan.agents },
    { section: 'cluster', name: 'agents on the busiest node after', value: Math.max(...perNodeAfter), unit: 'agents', target: 'reported', met: null },
  ];
}
