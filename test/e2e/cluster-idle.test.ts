/**
 * Idle sessions in a cluster (docs/settings.md, TETHER_SESSION_IDLE_SECONDS): a client joined on
 * an edge keeps its session open, since the edge tells the control node who is connected there;
 * once it leaves, the session closes `idle`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onNode, startCluster, type Cluster, type Node } from '../helpers/cluster';
import { startProcess, type Proc } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let cluster: Cluster;
let edge: Node;
let agent: Proc;

beforeAll(async () => {
  cluster = await startCluster({ edges: 1, heartbeatMs: 1500, controlEnv: { TETHER_SESSION_IDLE_SECONDS: '2' } });
  edge = cluster.edges[0]!;
  const device = (await cluster.admin.post('/v1/devices', { device_id: 'idle-dev' })).body.data;
  agent = startProcess(['agent', '--server', edge.url, '--device-id', 'idle-dev', '--no-warm-shell'], {
    TETHER_DEVICE_TOKEN: device.agent_token,
    TETHER_FILES_ROOT: tempDir('tether-idle-root-'),
  });
  await waitFor(
    async () => ((await cluster.admin.get('/v1/devices/idle-dev')).body.data.agent_status === 'online' ? true : undefined),
    'the agent online',
    15_000,
  );
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await cluster?.stop();
});

describe('a session whose client is on an edge', () => {
  it('stays open while the client is connected there, and closes idle once it left', async () => {
    const s = (await cluster.admin.post('/v1/remote-access/sessions', { device_id: 'idle-dev', protocol: 'shell' })).body.data;
    const stream = connectStream(onNode(s.websocket_url, edge.url));
    await stream.opened;
    stream.send(Buffer.from('echo here-$((40+2))\n'));
    await stream.waitForOutput(/here-42/);
    // Twice the idle time with the client on the edge: still open.
    const until = Date.now() + 4500;
    while (Date.now() < until) {
      expect((await cluster.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.status).toBe('open');
      await new Promise((r) => setTimeout(r, 250));
    }
    stream.ws.close(1000);
    await stream.closed;
    const closed = await waitFor(
      async () => {
        const record = (await cluster.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
        return record.status === 'closed' ? record : undefined;
      },
      'the session closed idle',
      10_000,
    );
    expect(closed.close_reason).toBe('idle');
  });
});
