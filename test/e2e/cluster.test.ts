/**
 * Brokers on several nodes joined by NATS (docs/cluster.md), all real processes on 127.0.0.1: a
 * nats-server from the system's packages, a control node, two edges and a device agent that
 * knows both edges and starts on edge A. The tests that leave the cluster as they found it share
 * one; each test that kills or restarts a part has a cluster of its own. No test depends on
 * another having run.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tar from 'tar-stream';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { listenEvents } from '../helpers/events';
import { metric, onNode, startCluster, type Cluster, type Node } from '../helpers/cluster';
import { startProcess, type Proc } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const MiB = 1024 * 1024;
const HEARTBEAT_MS = 1_500;
/** Two missed heartbeats (docs/cluster.md): how long an agent may be gone before it is offline. */
const DEADLINE_MS = 2 * HEARTBEAT_MS;
/** The agent's reconnect backoff reaches at most this (docs/cluster.md, failures). */
const BACKOFF_CEILING_MS = 30_000;

/** A cluster of one control node and two edges, and the device `edge-dev` whose agent knows both edges and is online through A. */
interface Layout {
  cluster: Cluster;
  edgeA: Node;
  edgeB: Node;
  agent: Proc;
  agentToken: string;
  root: string;
  status(deviceId: string): Promise<string>;
  openSession(protocol: string, token?: string): Promise<{ session_id: string; websocket_url: string }>;
  stop(): Promise<void>;
}

async function startLayout(): Promise<Layout> {
  const cluster = await startCluster({ edges: 2, heartbeatMs: HEARTBEAT_MS });
  const [edgeA, edgeB] = cluster.edges as [Node, Node];
  const root = tempDir('tether-cluster-root-');
  const device = (await cluster.admin.post('/v1/devices', { device_id: 'edge-dev' })).body.data;
  // The agent knows both edges; it starts on the first.
  const agent = startProcess(['agent', '--server', edgeA.url, '--server', edgeB.url, '--device-id', 'edge-dev', '--no-warm-shell'], {
    TETHER_DEVICE_TOKEN: device.agent_token,
    TETHER_FILES_ROOT: root,
    TETHER_LOG_LEVEL: 'info',
  });
  const layout: Layout = {
    cluster,
    edgeA,
    edgeB,
    agent,
    agentToken: device.agent_token,
    root,
    status: async (deviceId) => (await cluster.admin.get(`/v1/devices/${deviceId}`)).body.data.agent_status as string,
    async openSession(protocol, token) {
      const api = token ? client(cluster.control.url, token) : cluster.admin;
      const reply = await api.post('/v1/remote-access/sessions', { device_id: 'edge-dev', protocol });
      expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      return reply.body.data as { session_id: string; websocket_url: string };
    },
    async stop() {
      if (process.env.DUMP)
        for (const [n, p] of [
          ['control', cluster.control.proc],
          ['A', layout.edgeA.proc],
          ['B', layout.edgeB.proc],
          ['agent', agent],
        ] as const)
          console.log(n, p.stderr.slice(-40).join('\n'));
      await agent.stop();
      await cluster.stop();
    },
  };
  await waitFor(async () => ((await layout.status('edge-dev')) === 'online' ? true : undefined), 'the agent online', 15_000);
  await waitFor(async () => ((await metric(edgeA.url, 'tether_agents_online')) === 1 ? true : undefined), 'the agent on edge A', 5_000);
  return layout;
}

/** A fresh layout for each test of the describe block it is called in. */
function layoutForEachTest(): () => Layout {
  let current: Layout | undefined;
  beforeEach(async () => {
    current = await startLayout();
  }, 60_000);
  afterEach(async () => {
    await current?.stop();
    current = undefined;
  });
  return () => current!;
}

/** The presence events (`GET /v1/events` on the control node) of one device, with when each arrived. */
async function presenceEvents(layout: Layout, deviceId: string) {
  const seen: Array<{ event: string; at: number }> = [];
  const listener = await listenEvents(layout.cluster.control.url, { authorization: `Bearer ${layout.cluster.adminToken}` }, '', (e) => {
    if (e.event.startsWith('agent.') && e.data.device_id === deviceId) seen.push({ event: e.event, at: performance.now() });
  });
  expect(listener.status).toBe(200);
  return {
    seen,
    /** The longest time the device spent offline, from the events (one still offline counts up to now). */
    longestOffline(): number {
      let longest = 0;
      let since: number | undefined;
      for (const e of seen) {
        if (e.event === 'agent.offline') since ??= e.at;
        else if (since !== undefined) {
          longest = Math.max(longest, e.at - since);
          since = undefined;
        }
      }
      return since === undefined ? longest : Math.max(longest, performance.now() - since);
    },
    close: () => listener.close(),
  };
}

/** The SHA-256 of the one file a downloaded tar archive holds. */
async function digestOfArchive(archive: Buffer): Promise<{ name: string; sha256: string; size: number }> {
  const extract = tar.extract();
  const found: Array<{ name: string; sha256: string; size: number }> = [];
  extract.on('entry', (header, stream, next) => {
    const hash = createHash('sha256');
    let size = 0;
    stream.on('data', (c: unknown) => {
      hash.update(c as Buffer);
      size += (c as Buffer).length;
    });
    stream.on('end', () => {
      found.push({ name: header.name, sha256: hash.digest('hex'), size });
      next();
    });
  });
  const done = new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve);
    extract.on('error', reject);
  });
  extract.end(archive);
  await done;
  expect(found).toHaveLength(1);
  return found[0]!;
}

/** A shell session joined on `node`: echoes `word` and closes. */
async function shellThrough(layout: Layout, node: Node, word: string): Promise<void> {
  const shell = await layout.openSession('shell');
  const stream = connectStream(onNode(shell.websocket_url, node.url));
  await stream.opened;
  stream.send(Buffer.from(`echo ${word}\n`));
  await stream.waitForOutput(new RegExp(word));
  stream.ws.close(1000);
  await stream.closed;
  await layout.cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
}

describe('a cluster of one control node and two edges, left as each test found it', () => {
  let layout: Layout;
  let edgeA: Node;
  let edgeB: Node;
  let cluster: Cluster;
  let root: string;
  let agent: Proc;
  const status = (deviceId: string) => layout.status(deviceId);
  const openSession = (protocol: string, token?: string) => layout.openSession(protocol, token);

  beforeAll(async () => {
    layout = await startLayout();
    ({ cluster, edgeA, edgeB, root, agent } = layout);
  }, 60_000);
  afterAll(() => layout?.stop());

  // What every test here starts from: the agent online through A, no session open (a test that
  // failed half-way leaves none to the next).
  beforeEach(async () => {
    const open = (await cluster.admin.get('/v1/remote-access/sessions?device_id=edge-dev&status=open')).body.data as Array<{ session_id: string }>;
    for (const s of open) await cluster.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    await waitFor(async () => ((await status('edge-dev')) === 'online' ? true : undefined), 'the agent online', 15_000);
    expect(agent.child.exitCode).toBeNull();
    expect(await metric(edgeA.url, 'tether_agents_online')).toBe(1);
  });

  it('nodes say who they are: the edge logs its node id, answers /healthz and /metrics, and sends the API to the control node', async () => {
    // The node's name is its credentials' (edge-1), and each run adds its own 8 characters.
    expect(edgeA.proc.stdout.some((l) => /^node id edge-1-[a-z2-7]{8}$/.test(l))).toBe(true);
    const health = await (await fetch(`${edgeA.url}/healthz`)).json();
    expect(health).toMatchObject({ status: 'ok', role: 'edge', nats: 'connected' });
    expect(await metric(edgeB.url, 'tether_agents_online')).toBe(0);
    expect(await metric(cluster.control.url, 'tether_cluster_nodes')).toBe(3);
    const api = await fetch(`${edgeA.url}/v1/devices`);
    expect(api.status).toBe(404);
    expect(await api.json()).toMatchObject({ error: 'not_found', message: expect.stringContaining('the API is on the control node') });
  });

  it("presence the control node lost is repaired from the edge's digest within a few heartbeats", async () => {
    // A wrong report, as if one had been lost: "edge A holds no agents" (sent with A's own
    // credentials: only A may speak for A). The control node takes the device offline; A's next
    // heartbeats carry a digest of its real connections, which differs, so A is asked to resend
    // its presence and the device is online again.
    const nodeId = edgeA.proc.stdout.find((l) => /^node id edge-1-[a-z2-7]{8}$/.test(l))!.slice('node id '.length);
    const creds = readFileSync(await cluster.nats.creds('edge-1'));
    const nc = await connect({ servers: cluster.nats.url, authenticator: credsAuthenticator(creds), inboxPrefix: '_INBOX.edge-1' });
    try {
      nc.publish('tether.control.edge-1.presence', JSON.stringify({ kind: 'snapshot', node_id: nodeId, snapshot_id: 'lost-reports', online: [], last: true }));
      await nc.flush();
      await waitFor(async () => ((await status('edge-dev')) === 'offline' ? true : undefined), 'the device offline after the wrong report', 10_000);
      await waitFor(async () => ((await status('edge-dev')) === 'online' ? true : undefined), 'the device online again', 10 * HEARTBEAT_MS);
      expect(await metric(cluster.control.url, 'tether_cluster_resyncs_total')).toBeGreaterThanOrEqual(1);
    } finally {
      await nc.close();
    }
  });

  it("names the edge that holds the device's agent in websocket_url, and the stream works there as given", async () => {
    await waitFor(async () => ((await status('edge-dev')) === 'online' ? true : undefined), 'edge-dev online', 10_000);
    const holder = (await metric(edgeA.url, 'tether_agents_online')) === 1 ? edgeA : edgeB;
    expect(await metric(holder.url, 'tether_agents_online')).toBe(1);
    const diag = await openSession('diagnostics');
    expect(new URL(diag.websocket_url).port).toBe(String(holder.port));
    const stream = connectStream(diag.websocket_url);
    await stream.opened;
    expect((await stream.request('system.info')).ok).toBe(true);
    stream.ws.close();
    await cluster.admin.del(`/v1/remote-access/sessions/${diag.session_id}`);
  });

  it('an agent on edge A serves a shell and a 100 MiB download to a client on edge B, spliced on B, byte for byte', async () => {
    const shell = await openSession('shell');
    const stream = connectStream(onNode(shell.websocket_url, edgeB.url));
    await stream.opened;
    stream.send(Buffer.from('echo cluster-$((40+2))\n'));
    await stream.waitForOutput(/cluster-42/);
    stream.ws.close(1000);
    await stream.closed;

    const content = randomBytes(100 * MiB);
    writeFileSync(join(root, 'big.bin'), content);
    const transfer = await openSession('file-transfer');
    const bytesBefore = await metric(edgeB.url, 'tether_tunnel_bytes_total');
    const bytesBeforeOnA = await metric(edgeA.url, 'tether_tunnel_bytes_total');
    const files = connectStream(onNode(transfer.websocket_url, edgeB.url));
    await files.opened;
    const start = await files.request('download', { path: 'big.bin' });
    expect(start.ok).toBe(true);
    await files.waitForMessage((m) => m.id === start.id && m.done === true, 60_000);
    const got = await digestOfArchive(files.received());
    expect(got).toEqual({ name: 'big.bin', size: 100 * MiB, sha256: createHash('sha256').update(content).digest('hex') });
    // The bytes went through B (where the client is) and never through A (where the agent's control channel is).
    expect((await metric(edgeB.url, 'tether_tunnel_bytes_total')) - bytesBefore).toBeGreaterThan(100 * MiB);
    expect((await metric(edgeA.url, 'tether_tunnel_bytes_total')) - bytesBeforeOnA).toBe(0);
    files.ws.close(1000);
    await files.closed;
    // The byte counts reach the session record on the control node.
    await waitFor(
      async () => {
        const s = (await cluster.admin.get(`/v1/remote-access/sessions/${transfer.session_id}`)).body.data;
        return s.bytes_from_device > 100 * MiB ? s : undefined;
      },
      'byte counts from the edge',
      10_000,
    );
    await cluster.admin.del(`/v1/remote-access/sessions/${transfer.session_id}`);
    await cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
  }, 90_000);

  it('records a shell spliced on an edge on the control node', async () => {
    const shell = await openSession('shell');
    const stream = connectStream(onNode(shell.websocket_url, edgeB.url));
    await stream.opened;
    stream.send(Buffer.from('echo recorded-$((6*7))\n'));
    await stream.waitForOutput(/recorded-42/);
    stream.ws.close(1000);
    await stream.closed;
    await cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
    await waitFor(
      async () => (await cluster.admin.get(`/v1/remote-access/sessions/${shell.session_id}`)).body.data.recording?.in_progress === false || undefined,
      'the recording to finish',
      10_000,
    );
    let last = '';
    const text = await waitFor(
      async () => {
        const r = await fetch(`${cluster.control.url}/v1/remote-access/sessions/${shell.session_id}/recording?format=text`, {
          headers: { authorization: `Bearer ${cluster.adminToken}` },
        });
        if (r.status === 200) return await r.text();
        last = `${r.status} ${await r.text()}; the session's recording: ${JSON.stringify((await cluster.admin.get(`/v1/remote-access/sessions/${shell.session_id}`)).body.data.recording)}`;
        return undefined;
      },
      'the recording',
      20_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last answer: ${last}`);
    });
    expect(text).toContain('recorded-42');
  });

  it('revoking a token closes the streams it joined on every node, and its cached grant admits no one', async () => {
    const second = (await cluster.admin.post('/v1/tokens', { username: 'admin' })).body.data;
    const shell = await openSession('shell');
    const diag = await openSession('diagnostics');
    const bearer = { authorization: `Bearer ${second.token}` };
    const pathOf = (u: string) => u.split('?')[0]!;
    const onB = connectStream(onNode(pathOf(shell.websocket_url), edgeB.url), bearer);
    const onControl = connectStream(onNode(pathOf(diag.websocket_url), cluster.control.url), bearer);
    await Promise.all([onB.opened, onControl.opened]);
    onB.send(Buffer.from('echo before-revoke\n'));
    await onB.waitForOutput(/before-revoke/);
    expect((await cluster.admin.del(`/v1/tokens/${second.token_id}`)).status).toBe(200);
    expect(await onB.closed).toMatchObject({ code: 4401 });
    expect(await onControl.closed).toMatchObject({ code: 4401 });
    const again = connectStream(onNode(pathOf(shell.websocket_url), edgeB.url), bearer);
    expect((await again.closed).code).toBe(4401);
    await cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
    await cluster.admin.del(`/v1/remote-access/sessions/${diag.session_id}`);
  });

  it('a new agent token disconnects the agent on its edge, and the edge no longer admits the old one', async () => {
    const rotating = `rotating-${randomBytes(4).toString('hex')}`;
    const device = (await cluster.admin.post('/v1/devices', { device_id: rotating })).body.data;
    const old = startProcess(['agent', '--server', edgeA.url, '--device-id', rotating, '--no-warm-shell'], {
      TETHER_DEVICE_TOKEN: device.agent_token,
      TETHER_FILES_ROOT: root,
      TETHER_LOG_LEVEL: 'info',
    });
    let newToken = '';
    try {
      await waitFor(async () => ((await status(rotating)) === 'online' ? true : undefined), 'the agent online through edge A', 15_000);
      const rotated = await cluster.admin.post(`/v1/devices/${rotating}/agent-token`, {});
      expect(rotated.status).toBe(200);
      newToken = rotated.body.data.agent_token;
      await old.waitForLine(/replaced this device.s agent token/);
      // Edge A had admitted the old token a moment ago (it keeps agent checks for a minute): refused now.
      await old.waitForLine(/"status":401/, 15_000);
      await waitFor(async () => ((await status(rotating)) === 'offline' ? true : undefined), 'the device offline', 15_000);
    } finally {
      await old.stop();
    }
    const fresh = startProcess(['agent', '--server', edgeA.url, '--device-id', rotating, '--no-warm-shell'], {
      TETHER_DEVICE_TOKEN: newToken,
      TETHER_FILES_ROOT: root,
    });
    try {
      await waitFor(async () => ((await status(rotating)) === 'online' ? true : undefined), 'the agent with its new token online', 15_000);
    } finally {
      await fresh.stop();
    }
  });
});

describe('edge A killed (SIGKILL)', () => {
  const layout = layoutForEachTest();

  it('the agent is online through B within the backoff ceiling, never offline longer than the deadline', async () => {
    const { cluster, edgeA, edgeB } = layout();
    const events = await presenceEvents(layout(), 'edge-dev');
    try {
      const killedAt = performance.now();
      edgeA.proc.kill('SIGKILL');
      // Waits past the ceiling, so that the assertion on the time below is what decides.
      await waitFor(async () => ((await metric(edgeB.url, 'tether_agents_online')) === 1 ? true : undefined), 'the agent on edge B', 2 * BACKOFF_CEILING_MS);
      const movedAfter = performance.now() - killedAt;
      expect(movedAfter).toBeLessThanOrEqual(BACKOFF_CEILING_MS);
      // Past the deadline the control node has given A up; the device must be online then, through B.
      await waitFor(async () => ((await metric(cluster.control.url, 'tether_cluster_nodes')) === 2 ? true : undefined), 'edge A given up', 10_000);
      await waitFor(async () => ((await layout().status('edge-dev')) === 'online' ? true : undefined), 'the device online', DEADLINE_MS);
      expect(events.longestOffline()).toBeLessThanOrEqual(DEADLINE_MS);
      expect(events.seen.at(-1)?.event ?? 'agent.online').toBe('agent.online');
      await shellThrough(layout(), edgeB, 'after-failover');
    } finally {
      events.close();
    }
  }, 120_000);
});

describe('edge A stopped (SIGTERM)', () => {
  const layout = layoutForEachTest();

  // A stopping edge closes its agents' connections (1001) and does not report them gone: they
  // move to their other servers, and the control node gives A's agents the deadline, as for a
  // node lost. Before, A reported them offline at once and the device blinked offline.
  it('the agent moves to B and the device is never offline', async () => {
    const { cluster, edgeA, edgeB } = layout();
    const events = await presenceEvents(layout(), 'edge-dev');
    try {
      await edgeA.proc.stop();
      await waitFor(async () => ((await metric(edgeB.url, 'tether_agents_online')) === 1 ? true : undefined), 'the agent on edge B', 2 * BACKOFF_CEILING_MS);
      await waitFor(
        async () => ((await metric(cluster.control.url, 'tether_cluster_nodes')) === 2 ? true : undefined),
        'edge A given up',
        DEADLINE_MS + 10_000,
      );
      expect(await layout().status('edge-dev')).toBe('online');
      expect(events.seen.filter((e) => e.event === 'agent.offline')).toEqual([]);
      await shellThrough(layout(), edgeB, 'after-stop');
    } finally {
      events.close();
    }
  }, 120_000);
});

describe('an agent that moves from one edge to another', () => {
  const layout = layoutForEachTest();

  // The agent reached B while its connection to A was still open (A was slow to notice it gone,
  // as under load); A reports that connection's end only afterwards. The control node keeps every
  // connection reported, so A's late report changes nothing.
  it('presence follows it without a moment offline: a late disconnect from the old edge changes nothing', async () => {
    const { edgeA, edgeB, agent } = layout();
    const events = await presenceEvents(layout(), 'edge-dev');
    const samples: string[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        samples.push(await layout().status('edge-dev'));
        await new Promise((r) => setTimeout(r, 25));
      }
    })();
    // The device reaches B (a second connection of the same device, as an agent that gave up on
    // A makes); then its connection to A ends.
    const onB = startProcess(['agent', '--server', edgeB.url, '--device-id', 'edge-dev', '--no-warm-shell'], {
      TETHER_DEVICE_TOKEN: layout().agentToken,
      TETHER_FILES_ROOT: layout().root,
    });
    try {
      await waitFor(async () => ((await metric(edgeB.url, 'tether_agents_online')) === 1 ? true : undefined), 'the agent on edge B', 15_000);
      await agent.stop();
      await waitFor(async () => ((await metric(edgeA.url, 'tether_agents_online')) === 0 ? true : undefined), 'edge A without the agent', 10_000);
      // A's report, and a heartbeat whose digest covers it, have reached the control node by now.
      await new Promise((r) => setTimeout(r, HEARTBEAT_MS + 500));
      sampling = false;
      await sampler;
      expect(events.seen.filter((e) => e.event === 'agent.offline')).toEqual([]);
      expect(samples.length).toBeGreaterThan(10);
      expect(samples.filter((s) => s !== 'online')).toEqual([]);
      // Presence followed it: a stream joined on A reaches the device, through B.
      await shellThrough(layout(), edgeA, 'moved-to-b');
    } finally {
      sampling = false;
      events.close();
      await onB.stop();
    }
  }, 90_000);
});

describe('NATS killed mid-stream', () => {
  const layout = layoutForEachTest();

  it('the stream goes on, opening a session answers 503, and everything recovers once it is back', async () => {
    const { cluster, edgeA, edgeB } = layout();
    const shell = await layout().openSession('shell');
    // The client on edge B, the agent on edge A: the splice is on B.
    const stream = connectStream(onNode(shell.websocket_url, edgeB.url));
    await stream.opened;
    stream.send(Buffer.from('echo before-outage\n'));
    await stream.waitForOutput(/before-outage/);

    await cluster.nats.kill();
    // Session opens are rate-limited (30 a minute): ask once the control node knows the bus is away.
    await waitFor(async () => ((await metric(cluster.control.url, 'tether_cluster_bus_up')) === 0 ? true : undefined), 'the control node off the bus');
    const refused = await cluster.admin.post('/v1/remote-access/sessions', { device_id: 'edge-dev', protocol: 'diagnostics' });
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: 'unavailable', status: 503, message: expect.stringContaining('NATS') });
    expect(refused.headers.get('retry-after')).toBe('5');
    stream.send(Buffer.from('echo during-outage\n'));
    await stream.waitForOutput(/during-outage/);

    await cluster.nats.restart();
    for (const node of [cluster.control, edgeA, edgeB]) {
      await waitFor(async () => ((await metric(node.url, 'tether_cluster_bus_up')) === 1 ? true : undefined), 'every node back on the bus', 20_000);
    }
    const reopened = await cluster.admin.post('/v1/remote-access/sessions', { device_id: 'edge-dev', protocol: 'diagnostics' });
    expect(reopened.status, JSON.stringify(reopened.body)).toBe(201);
    const diag = reopened.body.data;
    stream.send(Buffer.from('echo after-outage\n'));
    await stream.waitForOutput(/after-outage/);
    // A new stream through another edge: the edges are back on the bus.
    const d = connectStream(onNode(diag.websocket_url, edgeB.url));
    await d.opened;
    expect((await d.request('system.info')).ok).toBe(true);
    expect(await layout().status('edge-dev')).toBe('online');
    d.ws.close(1000);
    stream.ws.close(1000);
    await Promise.all([d.closed, stream.closed]);
  }, 90_000);
});

describe('the control node restarted', () => {
  const layout = layoutForEachTest();

  it('edges keep their agents and resend their presence; the device never goes offline', async () => {
    const { cluster, edgeB } = layout();
    await cluster.control.proc.stop();
    await cluster.restartControl();
    const seen: string[] = [];
    const until = performance.now() + DEADLINE_MS + 1_500;
    while (performance.now() < until) {
      seen.push(await layout().status('edge-dev'));
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(seen.length).toBeGreaterThan(10);
    expect(
      seen.every((s) => s === 'online'),
      seen.join(','),
    ).toBe(true);
    expect(await metric(cluster.control.url, 'tether_cluster_nodes')).toBe(3);
    expect(await metric(cluster.control.url, 'tether_cluster_agents')).toBe(1);
    await shellThrough(layout(), edgeB, 'after-restart');
  }, 90_000);
});
