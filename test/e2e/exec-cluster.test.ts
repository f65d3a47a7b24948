/**
 * Exec streams (`&mode=exec`, docs/session-streams.md, exec) where the client joins one node and
 * the agent is held by another: the mode reaches the agent through the cluster's control node
 * (from an edge: `stream-open`; from the control node: `agent.send` through the edge); with peers on
 * PostgreSQL (that project only), a session opened on one peer is joined where `websocket_url`
 * says, the peer that holds the agent (docs/peers.md). Real processes: nats-server, nodes, an agent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onNode, startCluster, type Cluster, type Node } from '../helpers/cluster';
import type { Client } from '../helpers/http';
import { startPeers, type Peers } from '../helpers/peers';
import { startProcess, type Proc } from '../helpers/processes';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

/** Registers `deviceId` through `admin` and starts its agent on `serverUrl`; resolves once it is online. */
async function agentOn(admin: Client, serverUrl: string, deviceId: string): Promise<Proc> {
  const created = await admin.post('/v1/devices', { device_id: deviceId });
  expect(created.status).toBe(201);
  const agent = startProcess(['agent', '--server', serverUrl, '--device-id', deviceId, '--no-warm-shell'], {
    TETHER_DEVICE_TOKEN: created.body.data.agent_token,
  });
  await waitFor(async () => (await admin.get(`/v1/devices/${deviceId}`)).body.data.agent_status === 'online', `${deviceId} online`, 15_000);
  return agent;
}

/** Opens a shell session of `deviceId`, joins its stream on `nodeUrl` (undefined: as `websocket_url` says) with `mode`, and sends `argv` first. */
async function execOn(admin: Client, deviceId: string, nodeUrl: string | undefined, argv: string[], mode = 'exec') {
  const res = await admin.post('/v1/remote-access/sessions', { device_id: deviceId, protocol: 'shell' });
  expect(res.status).toBe(201);
  const url: string = res.body.data.websocket_url;
  const client = connectStream(`${nodeUrl === undefined ? url : onNode(url, nodeUrl)}&mode=${mode}`);
  await client.opened;
  client.send({ type: 'exec', argv });
  const closed = await client.closed;
  await admin.del(`/v1/remote-access/sessions/${res.body.data.session_id}`);
  const stderr = Buffer.concat(client.messages.filter((m) => m.type === 'stderr').map((m) => Buffer.from(m.data, 'base64'))).toString();
  return { closed, client, stderr, sessionId: res.body.data.session_id as string };
}

describe('exec across a cluster: the agent on edge A', () => {
  let cluster: Cluster;
  let edgeA: Node;
  let edgeB: Node;
  let agent: Proc;
  beforeAll(async () => {
    cluster = await startCluster({ edges: 2, heartbeatMs: 1_500 });
    [edgeA, edgeB] = cluster.edges as [Node, Node];
    agent = await agentOn(cluster.admin, edgeA.url, 'exec-edge');
  }, 60_000);
  afterAll(async () => {
    await agent?.stop();
    await cluster?.stop();
  });

  it('runs the command with the client on edge B, on the control node, and on edge A itself', async () => {
    for (const [name, node] of [
      ['edge B', edgeB],
      ['control', cluster.control],
      ['edge A', edgeA],
    ] as const) {
      const r = await execOn(cluster.admin, 'exec-edge', node.url, ['sh', '-c', 'echo "out $0"; echo err >&2', name]);
      expect(r.closed, name).toEqual({ code: 1000, reason: 'command exited' });
      expect(r.client.messages[0], name).toEqual({ type: 'exec.started' });
      expect(r.client.received().toString(), name).toBe(`out ${name}\n`);
      expect(r.stderr, name).toBe('err\n');
      expect(r.client.messages.at(-1), name).toEqual({ type: 'exit', code: 0, signal: null });
    }
  });

  it('records an exec stream spliced on an edge with its command line and its stderr', async () => {
    const r = await execOn(cluster.admin, 'exec-edge', edgeB.url, ['sh', '-c', 'echo to-stderr >&2']);
    expect(r.closed.code).toBe(1000);
    const cast = await waitFor(async () => {
      const res = await cluster.admin.get(`/v1/remote-access/sessions/${r.sessionId}/recording`);
      return res.status === 200 && res.text.includes('"exit 0"') && (res.text as string);
    }, 'the recording');
    expect(cast).toContain(`"m","exec sh -c 'echo to-stderr >&2'"`);
    expect(cast).toContain('"o","to-stderr\\n"');
  });

  it('an edge refuses a mode it does not know (4400) without asking the device', async () => {
    const r = await execOn(cluster.admin, 'exec-edge', edgeB.url, ['true'], 'bogus');
    expect(r.closed).toEqual({ code: 4400, reason: 'bad mode "bogus": one of shell, exec' });
    expect(r.client.frames).toEqual([]);
  });
});

describe.skipIf(process.env.TESTRUN_STORE !== 'postgres')('exec across peers on PostgreSQL: the agent on peer 0', () => {
  let peers: Peers;
  let agent: Proc;
  beforeAll(async () => {
    peers = await startPeers(2);
    agent = await agentOn(peers.admin(0), peers.peers[0]!.url, 'exec-peer');
  }, 60_000);
  afterAll(async () => {
    await agent?.stop();
    await peers?.stop();
  });

  it('runs the command of a session opened on peer 1, joined where websocket_url says', async () => {
    const r = await execOn(peers.admin(1), 'exec-peer', undefined, ['sh', '-c', 'echo out; echo err >&2; exit 4']);
    expect(r.closed).toEqual({ code: 1000, reason: 'command exited' });
    expect(r.client.messages[0]).toEqual({ type: 'exec.started' });
    expect(r.client.received().toString()).toBe('out\n');
    expect(r.stderr).toBe('err\n');
    expect(r.client.messages.at(-1)).toEqual({ type: 'exit', code: 4, signal: null });
  });
});
