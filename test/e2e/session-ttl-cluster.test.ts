/**
 * Warnings before a session's end where the stream is not on the node whose timer closes the
 * session (docs/session-streams.md, notices): on a cluster's edge (the notice comes from the edge
 * that holds the client's stream, re-armed by the control node's broadcast of an extend), and, on
 * PostgreSQL, on peers (an extend on one peer re-arms the stream held on another, and each
 * `session.expiring` event goes out once). TETHER_SESSION_WARNINGS=118,116,58,56: a 60 s session
 * warns 2 and 4 s after it opens, and 2 s after it is extended to 120 s.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenEvents } from '../helpers/events';
import { startCluster, type Cluster, type Node } from '../helpers/cluster';
import { startPeers, type Peers } from '../helpers/peers';
import { startProcess, type Proc } from '../helpers/processes';
import { onPostgres } from '../helpers/store';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const WARNINGS = '118,116,58,56';
// Every node these tests start (control, edges, peers) reads it from the environment it inherits.
process.env.TETHER_SESSION_WARNINGS = WARNINGS;

const agents: Proc[] = [];
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
});

describe('a cluster with an edge', () => {
  let cluster: Cluster;
  let edge: Node;
  let agent: Proc;

  beforeAll(async () => {
    cluster = await startCluster({ edges: 1, heartbeatMs: 1_500 });
    edge = cluster.edges[0]!;
    const device = (await cluster.admin.post('/v1/devices', { device_id: 'ttl-edge-dev' })).body.data;
    agent = startProcess(['agent', '--server', edge.url, '--device-id', 'ttl-edge-dev', '--no-warm-shell'], { TETHER_DEVICE_TOKEN: device.agent_token });
    agents.push(agent);
    await waitFor(async () => (await cluster.admin.get('/v1/devices/ttl-edge-dev')).body.data.agent_status === 'online', 'the agent online', 15_000);
  }, 60_000);
  afterAll(async () => {
    await agent?.stop();
    await cluster?.stop();
  });

  it('warns the client whose stream is on the edge, and again after an extend made on the control node', async () => {
    const res = await cluster.admin.post('/v1/remote-access/sessions', { device_id: 'ttl-edge-dev', protocol: 'shell', ttl_seconds: 60 });
    expect(res.status, res.text).toBe(201);
    const s = res.body.data;
    expect(new URL(s.websocket_url).port).toBe(String(edge.port)); // the stream is spliced on the edge
    const client = connectStream(s.websocket_url);
    await client.opened;
    const first = await client.waitForMessage((m) => m.type === 'notice' && m.seconds_left === 58, 15_000);
    expect(first).toMatchObject({ code: 'session_expiring', expires_at: s.expires_at });
    await client.waitForMessage((m) => m.type === 'notice' && m.seconds_left === 56);
    await edge.proc.waitForLine(new RegExp(`warning the client: the session expires soon.*${s.session_id}`));

    const extended = await cluster.admin.post(`/v1/remote-access/sessions/${s.session_id}/extend`, { ttl_seconds: 120 });
    expect(extended.status, extended.text).toBe(200);
    const again = await client.waitForMessage((m) => m.type === 'notice' && m.seconds_left === 118, 15_000);
    expect(again.expires_at).toBe(extended.body.data.expires_at);
    // The agent, held by the edge, learnt the new end too.
    await agent.waitForLine(new RegExp(`"session opened".*${s.session_id}.*${extended.body.data.expires_at}`));
    client.send(Buffer.from('echo still-$((6*7))\n'));
    await client.waitForOutput(/still-42/);
    expect((await cluster.admin.del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(200);
  });
});

describe.runIf(onPostgres)('peers on PostgreSQL', () => {
  let peers: Peers;

  beforeAll(async () => {
    peers = await startPeers(2);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await peers?.stop();
  });

  it('an extend on peer B re-arms the notices of the stream on peer A and tells its agent; each session.expiring goes out once', async () => {
    const created = await peers.admin(0).post('/v1/devices', { device_id: 'ttl-peer-dev' });
    const agent = startProcess(['agent', '--server', peers.peers[0]!.url, '--device-id', 'ttl-peer-dev'], {
      TETHER_DEVICE_TOKEN: created.body.data.agent_token,
    });
    agents.push(agent);
    await waitFor(async () => (await peers.admin(0).get('/v1/devices/ttl-peer-dev')).body.data.agent_status === 'online', 'the agent online', 15_000);
    const onB = await listenEvents(peers.peers[1]!.url, { authorization: `Bearer ${peers.adminToken}` });
    const onA = await listenEvents(peers.peers[0]!.url, { authorization: `Bearer ${peers.adminToken}` });

    // Opened and extended on B; the agent, and so the stream, are on A; the first peer started (A) leads, as a rule.
    const s = (await peers.admin(1).post('/v1/remote-access/sessions', { device_id: 'ttl-peer-dev', protocol: 'diagnostics', ttl_seconds: 60 })).body.data;
    expect(new URL(s.websocket_url).port).toBe(String(peers.peers[0]!.port));
    const client = connectStream(s.websocket_url);
    await client.opened;
    await client.waitForMessage((m) => m.type === 'notice' && m.seconds_left === 56, 15_000);

    const extended = await peers.admin(1).post(`/v1/remote-access/sessions/${s.session_id}/extend`, { ttl_seconds: 120 });
    expect(extended.status, extended.text).toBe(200);
    const newEnd = extended.body.data.expires_at;
    const again = await client.waitForMessage((m) => m.type === 'notice' && m.seconds_left === 118, 15_000);
    expect(again.expires_at).toBe(newEnd);
    await agent.waitForLine(new RegExp(`"session opened".*${s.session_id}.*${newEnd}`));

    // Both peers' streams carry each warning once: one peer (the housekeeping's) tells, the bus carries it.
    const mine = (on: typeof onA) => on.events.filter((e) => e.event === 'session.expiring' && e.data.session_id === s.session_id);
    for (const on of [onA, onB]) {
      await waitFor(() => mine(on).some((e) => e.data.seconds_left === 116), 'the 116 s warning', 15_000);
      expect(mine(on).map((e) => [e.data.seconds_left, e.data.expires_at])).toEqual([
        [58, s.expires_at],
        [56, s.expires_at],
        [118, newEnd],
        [116, newEnd],
      ]);
    }
    onA.close();
    onB.close();
    expect((await peers.admin(1).del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(200);
  });
});
