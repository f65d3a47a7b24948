/**
 * The cluster bus as a hostile party meets it (docs/cluster.md, security): a real `nats-server`
 * configured as the docs say (`tether cluster nats-config`), a control node and two edges with
 * credentials of their own, one agent on edge 1. An anonymous client must not get on the bus; a
 * client holding one more edge's credentials (a stolen edge) must not reach a device it does not
 * hold, read a secret, answer for the control node, or grow the control node.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { connect, credsAuthenticator, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metric, onNode, startCluster, type Cluster, type Node } from '../helpers/cluster';
import { startProcess, type Proc } from '../helpers/processes';
import { tempDir } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const HEARTBEAT_MS = 1500;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
const streamId = () => Array.from(randomBytes(26), (b) => BASE32[b & 31]).join('');

let cluster: Cluster;
let edge1: Node;
let edge2: Node;
let agent: Proc;
let agentToken: string;
/** The thief: a bus client holding the credentials of an edge that is not running. */
let thief: NatsConnection;
/** Everything the thief could read while the tests ran. */
const overheard: string[] = [];
/** Everything the nodes sent the control node, as one holding the control node's credentials reads it. */
const sentToControl: string[] = [];
let eavesdropper: NatsConnection;

const status = async (id: string) => (await cluster.admin.get(`/v1/devices/${id}`)).body.data.agent_status as string;
const rssKiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

async function openShell(): Promise<{ session_id: string; websocket_url: string }> {
  const res = await cluster.admin.post('/v1/remote-access/sessions', { device_id: 'dev-held', protocol: 'shell', ttl_seconds: 600 });
  expect(res.status).toBe(201);
  return res.body.data;
}

/** Publishes as the thief and waits until the bus has it (and the control node had a moment to act). */
async function publish(subject: string, body: unknown): Promise<void> {
  thief.publish(subject, typeof body === 'string' ? body : JSON.stringify(body));
  await thief.flush();
}

beforeAll(async () => {
  cluster = await startCluster({ edges: 2, heartbeatMs: HEARTBEAT_MS });
  [edge1, edge2] = cluster.edges as [Node, Node];
  eavesdropper = await connect({
    servers: cluster.nats.url,
    authenticator: credsAuthenticator(readFileSync(await cluster.nats.creds('control'))),
    inboxPrefix: '_INBOX.control',
  });
  eavesdropper.subscribe('tether.control.>', { callback: (_err, m) => void sentToControl.push(`${m.subject} ${m.string()}`) });
  await eavesdropper.flush();
  const device = (await cluster.admin.post('/v1/devices', { device_id: 'dev-held' })).body.data;
  agentToken = device.agent_token;
  agent = startProcess(['agent', '--server', edge1.url, '--device-id', 'dev-held', '--no-warm-shell'], {
    TETHER_DEVICE_TOKEN: agentToken,
    TETHER_FILES_ROOT: tempDir('tether-hostile-root-'),
  });
  await waitFor(async () => ((await status('dev-held')) === 'online' ? true : undefined), 'the agent online through edge 1', 15_000);
  thief = await connect({
    servers: cluster.nats.url,
    authenticator: credsAuthenticator(readFileSync(await cluster.nats.creds('edge-thief'))),
    inboxPrefix: '_INBOX.edge-thief',
  });
  // What a stolen edge may read: the broadcasts and its own replies. Record them all.
  for (const subject of ['tether.broadcast', '_INBOX.edge-thief.>']) {
    thief.subscribe(subject, { callback: (_err, m) => void overheard.push(`${m.subject} ${m.string()}`) });
  }
}, 60_000);

afterAll(async () => {
  await eavesdropper?.close();
  await thief?.close();
  await agent?.stop();
  await cluster?.stop();
});

describe('the bus set up as docs/cluster.md says', () => {
  it('nats-config writes a configuration and one credentials file per node, each readable by its owner only', () => {
    const dir = cluster.nats.credsDir!;
    for (const file of ['nats-server.conf', 'control.creds', 'edge-1.creds', 'edge-2.creds', 'operator.nk', 'account.nk']) {
      expect(statSync(`${dir}/${file}`).mode & 0o077, file).toBe(0);
    }
    expect(readFileSync(`${dir}/edge-1.creds`, 'utf8')).toMatch(/-----BEGIN NATS USER JWT-----[\s\S]+-----BEGIN USER NKEY SEED-----/);
  });

  it("adding an edge later keeps every existing node's credentials working, with no restart of the bus", async () => {
    const before = readFileSync(await cluster.nats.creds('edge-1'), 'utf8');
    const late = await cluster.nats.creds('edge-late'); // runs `tether cluster nats-config` again
    expect(readFileSync(await cluster.nats.creds('edge-1'), 'utf8')).toBe(before);
    const nc = await connect({ servers: cluster.nats.url, authenticator: credsAuthenticator(readFileSync(late)), inboxPrefix: '_INBOX.edge-late' });
    await nc.close();
    expect(await metric(edge1.url, 'tether_cluster_bus_up')).toBe(1);
  });

  it("a client without a node's credentials cannot connect at all", async () => {
    await expect(connect({ servers: cluster.nats.url, timeout: 3000, reconnect: false })).rejects.toThrow(/Authorization Violation/);
    await expect(connect({ servers: cluster.nats.url, user: 'tether', pass: 'tether', timeout: 3000, reconnect: false })).rejects.toThrow(
      /Authorization Violation/,
    );
  });
});

describe("a stolen edge's credentials", () => {
  it("cannot read other nodes' traffic, nor answer for the control node or another node", async () => {
    for (const subject of ['>', 'tether.control.>', 'tether.control.*.agent-auth', 'tether.node.edge-1', '_INBOX.control.>', '_INBOX.edge-1.>']) {
      const nc = await connect({
        servers: cluster.nats.url,
        authenticator: credsAuthenticator(readFileSync(await cluster.nats.creds('edge-thief'))),
        inboxPrefix: '_INBOX.edge-thief',
      });
      const errors: string[] = [];
      void (async () => {
        for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
      })();
      nc.subscribe(subject);
      await nc.flush();
      await waitFor(() => (errors.some((e) => /Permissions Violation for Subscription/.test(e)) ? true : undefined), `refusal of ${subject}`, 5000);
      await nc.close();
    }
    // Nor race the control node's answers into another node's replies, nor send commands or broadcasts.
    for (const subject of ['_INBOX.edge-1.x.y', '_INBOX.control.x.y', 'tether.node.edge-1', 'tether.broadcast', 'tether.control.edge-1.presence']) {
      const nc = await connect({
        servers: cluster.nats.url,
        authenticator: credsAuthenticator(readFileSync(await cluster.nats.creds('edge-thief'))),
        inboxPrefix: '_INBOX.edge-thief',
      });
      const errors: string[] = [];
      void (async () => {
        for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
      })();
      nc.publish(subject, '{"ok":true}');
      await nc.flush();
      await waitFor(() => (errors.some((e) => /Permissions Violation for Publish/.test(e)) ? true : undefined), `refusal to publish on ${subject}`, 5000);
      await nc.close();
    }
  });

  it('cannot open a stream on a device another node holds: the control node relays stream.open only for a stream it granted to that node', async () => {
    const shell = await openShell();
    // The original attack, on its old subject: not this node's to publish on.
    await expect(
      thief.request('tether.control.stream-open', JSON.stringify({ device_id: 'dev-held', message: { type: 'stream.open' } }), { timeout: 1000 }),
    ).rejects.toThrow();
    // On its own subject, for a session it was never granted: refused, and the agent dials nothing.
    const reply = await thief.request('tether.control.edge-thief.stream-open', JSON.stringify({ session_id: shell.session_id, stream_id: streamId() }), {
      timeout: 3000,
    });
    expect(reply.json()).toEqual({ sent: false });
    // A heartbeat first (to have a URL the control node would name), then the same: still refused.
    const runId = `edge-thief-${streamId().slice(0, 8)}`;
    await thief.request('tether.control.edge-thief.node', JSON.stringify({ node_id: runId, url: 'http://127.0.0.1:9', agents: 0 }), { timeout: 3000 });
    const again = await thief.request('tether.control.edge-thief.stream-open', JSON.stringify({ session_id: shell.session_id, stream_id: streamId() }), {
      timeout: 3000,
    });
    expect(again.json()).toEqual({ sent: false });
    expect(agent.stderr.join('\n')).not.toContain('127.0.0.1:9');
    // A made-up agent proof or client credential gets nothing either.
    const auth = await thief.request('tether.control.edge-thief.agent-auth', JSON.stringify({ device_id: 'dev-held', proof: 'x'.repeat(43) }), {
      timeout: 3000,
    });
    expect(auth.json()).toEqual({ ok: false });
    const grant = await thief.request(
      'tether.control.edge-thief.stream-auth',
      JSON.stringify({ session_id: shell.session_id, bearer_digest: '0'.repeat(64) }),
      { timeout: 3000 },
    );
    expect(grant.json()).toMatchObject({ ok: false });
    expect((await cluster.admin.get(`/v1/audit/remote-access?session_id=${shell.session_id}`)).body.data.map((e: { event: string }) => e.event)).toEqual([
      'session.opened',
    ]);
    await cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
  });

  it('cannot pin a device to itself, nor make the control node keep 50,000 agents it does not hold', async () => {
    const runId = `edge-thief-${streamId().slice(0, 8)}`;
    const refusedBefore = await metric(cluster.control.url, 'tether_cluster_refused_total');
    const rssBefore = rssKiB(cluster.control.proc.pid);
    // The real device, claimed with a made-up proof, then 50,000 devices that do not exist.
    const claim = (id: string, i: number) => ({
      device_id: id,
      generation: i + 1,
      since: Date.now() + 60_000,
      agent_version: '9',
      forward_allow: null,
      proof: 'p'.repeat(43),
    });
    await publish('tether.control.edge-thief.presence', { kind: 'changes', node_id: runId, online: [claim('dev-held', 0)], offline: [] });
    for (let part = 0; part < 25; part++) {
      const online = Array.from({ length: 2000 }, (_, i) => claim(`fake-${part}-${i}`, i));
      await publish('tether.control.edge-thief.presence', { kind: 'changes', node_id: runId, online, offline: [] });
    }
    await waitFor(
      async () => ((await metric(cluster.control.url, 'tether_cluster_refused_total')) >= refusedBefore + 50_001 ? true : undefined),
      'every claim refused',
      20_000,
    );
    expect(await metric(cluster.control.url, 'tether_cluster_agents')).toBe(1);
    expect((rssKiB(cluster.control.proc.pid) - rssBefore) / 1024).toBeLessThan(64);
    // Another node's run named in the body: dropped too (only edge-1 speaks for edge-1).
    await publish('tether.control.edge-thief.presence', { kind: 'snapshot', node_id: await edgeRun(edge1), snapshot_id: 'x', online: [], last: true });
    // The device is still reached through edge 1: a client on edge 2 gets its shell, not 4504.
    const shell = await openShell();
    const stream = connectStream(onNode(shell.websocket_url, edge2.url));
    await stream.opened;
    stream.send(Buffer.from('echo still-$((40+2))\n'));
    await stream.waitForOutput(/still-42/);
    stream.ws.close(1000);
    await stream.closed;
    expect(await status('dev-held')).toBe('online');
    await cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
  });

  it('cannot set byte counters, nor write into a recording, of a session it holds no stream of', async () => {
    const shell = await openShell();
    const bad = await thief
      .request('tether.control.edge-thief.bytes', JSON.stringify({ counts: [[shell.session_id, -999_945, 1e15]] }), { timeout: 1000 })
      .catch(() => undefined);
    expect(bad).toBeUndefined(); // malformed: dropped, nobody answers
    const ok = await thief.request('tether.control.edge-thief.bytes', JSON.stringify({ counts: [[shell.session_id, 1000, 1000]] }), { timeout: 3000 });
    expect(ok.json()).toEqual({ ok: true }); // acknowledged, and ignored: no stream of it on that node
    const headers = (kind: string) => {
      const h = natsHeaders();
      h.set('tether-stream', 'forged-stream');
      h.set('tether-kind', kind);
      return h;
    };
    thief.publish('tether.control.edge-thief.recording', JSON.stringify({ session_id: shell.session_id }), { headers: headers('start') });
    thief.publish('tether.control.edge-thief.recording', Buffer.from([1, 1, 0, 0, 0, 9, ...Buffer.from('injected\n')]), { headers: headers('frames') });
    thief.publish('tether.control.edge-thief.recording', new Uint8Array(0), { headers: headers('end') });
    await thief.flush();
    await cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
    const record = (await cluster.admin.get(`/v1/remote-access/sessions/${shell.session_id}`)).body.data;
    expect(record).toMatchObject({ bytes_to_device: 0, bytes_from_device: 0, recording: null });
    expect(await metric(cluster.control.url, 'tether_cluster_refused_total')).toBeGreaterThan(0);
  });

  it('read no token, ticket or agent token in all it overheard, nor does the control node get any, though agents joined and sessions streamed', async () => {
    const shell = await openShell();
    // One client with the ticket, one with the bearer token, both on edge 2 (the agent dials there).
    for (const headers of [{}, { authorization: `Bearer ${cluster.adminToken}` }] as Array<Record<string, string>>) {
      const url = onNode(shell.websocket_url, edge2.url);
      const stream = connectStream(Object.keys(headers).length ? url.replace(/\?ticket=.*$/, '') : url, headers);
      await stream.opened;
      stream.send(Buffer.from('echo heard-$((40+2))\n'));
      await stream.waitForOutput(/heard-42/);
      stream.ws.close(1000);
      await stream.closed;
    }
    await cluster.admin.del(`/v1/remote-access/sessions/${shell.session_id}`);
    await waitFor(() => (overheard.some((m) => m.includes(shell.session_id) && m.includes('session.closed')) ? true : undefined), 'the close broadcast', 5000);
    const ticket = new URL(shell.websocket_url).searchParams.get('ticket')!;
    const secrets = [cluster.adminToken, agentToken, ticket, ticket.split('.').at(-1)!];
    // The control node was asked to check the agent, the ticket and the token: by their proofs and digests only.
    expect(sentToControl.some((m) => m.includes('.agent-auth '))).toBe(true);
    expect(sentToControl.some((m) => m.includes('ticket_digest'))).toBe(true);
    expect(sentToControl.some((m) => m.includes('bearer_digest'))).toBe(true);
    for (const secret of secrets) {
      expect(overheard.join('\n')).not.toContain(secret);
      expect(sentToControl.join('\n')).not.toContain(secret);
    }
  });
});

/** The run id edge `node` printed (`node id edge-N-xxxxxxxx`). */
async function edgeRun(node: Node): Promise<string> {
  return (await node.proc.waitForLine(/^node id /)).slice('node id '.length);
}
