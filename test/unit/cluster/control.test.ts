/**
 * The control node (cluster/control.ts) on a real nats-server, with the test playing the nodes:
 * what it takes from a node and what it drops. A node speaks only for itself (the name in its
 * subject), must prove each agent it reports, keeps one run at a time, is granted streams one
 * by one, and cannot make the control node keep more than the bounds of docs/cluster.md. The
 * API and the local relay are the ports the composition root fills (cluster/control.ts,
 * cluster/local-relay.ts), here filled with records of what the control node asked of them.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBus } from '../../../cluster/bus';
import { createControl, type PresenceWrite } from '../../../cluster/control';
import { digestOf } from '../../../cluster/holders';
import { agentKey, nodeAgentProof, streamOpenSignature, streamProof } from '../../../shared/auth/agent-proofs';
import { BROADCAST_SUBJECT, PART, RECORDING_HEADERS } from '../../../shared/protocol/cluster';
import { silentLogger } from '../../../shared/log';
import { createMetrics, type Metrics } from '../../../shared/metrics';
import type { StreamRecording } from '../../../shared/relay/recording';
import type { StreamGrant } from '../../../shared/protocol/session-stream';
import { busPeer, type BusPeer, type Received } from '../../helpers/bus-peer';
import { startNats, type NatsServer } from '../../helpers/nats';
import { waitFor } from '../../helpers/wait';

/** Deadline 400 ms; the control node sweeps every 100 ms. */
const HEARTBEAT_MS = 200;
const CONTROL_RUN = 'control-cccccccc';
/** A run id of node `name` (its name and 8 characters of base32). */
const runOf = (name: string, c = 'a') => `${name}-${c.repeat(8)}`;
const TOKENS: Record<string, string> = { 'dev-1': 'tdev_one', 'dev-2': 'tdev_two', 'dev-3': 'tdev_three' };
const keyOf = (deviceId: string) => agentKey(TOKENS[deviceId] ?? 'unknown');
const proof = (node: string, deviceId: string) => nodeAgentProof(keyOf(deviceId), node, deviceId);
const FUTURE = new Date(Date.now() + 3_600_000).toISOString();
const GRANT: StreamGrant = { sessionId: 'sess-1', deviceId: 'dev-1', protocol: 'shell', expiresAt: FUTURE };
const TICKET_DIGEST = 'ab'.repeat(32);
const STREAM_ID = 'a'.repeat(26);
const control = (node: string, verb: string) => `tether.control.${node}.${verb}`;
/** The relay port the control node is started with (cluster/: what a node needs of its relay). */
type LocalRelay = Parameters<ReturnType<typeof createControl>['start']>[0];

let nats: NatsServer;
beforeAll(async () => {
  nats = await startNats({ open: true });
});

/** The control node under test and everything it told its ports. */
interface Fixture {
  control: ReturnType<typeof createControl>;
  bus: ReturnType<typeof createBus>;
  metrics: Metrics;
  writes: PresenceWrite[];
  seen: Array<Map<string, number>>;
  bytes: Array<Map<string, { toDevice: number; fromDevice: number }>>;
  clients: string[];
  recordings: Array<{ grant: StreamGrant; streamId: string; payloads: string[]; ended: boolean }>;
  /** What the control node asked of its local relay. */
  local: string[];
  /** Broadcasts seen on the bus. */
  broadcasts: Received[];
  start(): Promise<void>;
}

let peer: BusPeer;
let fixture: Fixture | undefined;
beforeEach(async () => {
  peer = await busPeer(nats.url);
});
afterEach(async () => {
  await fixture?.control.close();
  fixture = undefined;
  await peer.close();
});

async function makeControl(options: { onlineIds?: string[]; started?: boolean; heartbeatMs?: number } = {}): Promise<Fixture> {
  const metrics = createMetrics();
  const f = {
    metrics,
    writes: [] as PresenceWrite[],
    seen: [] as Fixture['seen'],
    bytes: [] as Fixture['bytes'],
    clients: [] as string[],
    recordings: [] as Fixture['recordings'],
    local: [] as string[],
    broadcasts: await peer.listen(BROADCAST_SUBJECT),
  };
  const bus = createBus({
    url: nats.url,
    nodeName: 'control',
    name: 'tether-control-test',
    log: silentLogger,
    onUp: () => c.busUp(),
    onDown: () => c.busDown(),
  });
  const c = createControl({
    bus,
    run: CONTROL_RUN,
    publicUrl: 'http://control.test',
    heartbeatMs: options.heartbeatMs ?? HEARTBEAT_MS,
    log: silentLogger,
    metrics,
    now: Date.now,
    api: {
      agentKey: async (deviceId) => (TOKENS[deviceId] === undefined ? undefined : keyOf(deviceId)),
      agentKeys: async (deviceIds) => new Map(deviceIds.filter((id) => TOKENS[id] !== undefined).map((id) => [id, keyOf(id)])),
      authorizeStream: async (sessionId, credentials) =>
        sessionId === GRANT.sessionId && credentials.ticketDigest === TICKET_DIGEST
          ? { ok: true, grant: GRANT }
          : { ok: false, code: 4401, reason: 'no valid ticket' },
      openSession: async (sessionId) => (sessionId === GRANT.sessionId ? GRANT : undefined),
      recordBytes: async (counts) => void f.bytes.push(counts),
      streamClients: { attached: (id) => void f.clients.push(`attached ${id}`), detached: (id) => void f.clients.push(`detached ${id}`) },
      presence: {
        apply: async (changes) => void f.writes.push(...changes),
        onlineIds: async () => options.onlineIds ?? [],
        seen: async (lastSeen) => void f.seen.push(lastSeen),
      },
      recordings: {
        start(grant, streamId): StreamRecording {
          const r = { grant, streamId, payloads: [] as string[], ended: false };
          f.recordings.push(r);
          const tap = { frame() {}, payload: (slice: Uint8Array) => void r.payloads.push(Buffer.from(slice).toString()) };
          return { fromClient: tap, fromDevice: tap, end: () => void (r.ended = true) };
        },
      },
    },
  });
  const localRelay: LocalRelay = {
    sendToAgent: (deviceId) => (f.local.push(`sendToAgent ${deviceId}`), false),
    sessionOpened: (s) => void f.local.push(`sessionOpened ${s.session_id}`),
    sessionClosed: (s) => void f.local.push(`sessionClosed ${s.session_id} ${s.close_reason}`),
    deviceDeleted: (id) => void f.local.push(`deviceDeleted ${id}`),
    agentTokenRotated: (id) => void f.local.push(`agentTokenRotated ${id}`),
    tokenRevoked: (id) => void f.local.push(`tokenRevoked ${id}`),
    streamRefused: () => false,
    agents: () => [],
    agentCount: () => 0,
    disconnectAgents: () => {},
  };
  const fx: Fixture = {
    ...f,
    control: c,
    bus,
    async start() {
      c.start(localRelay);
      // Subscribed once its first broadcast (resync) is out: the subscriptions went first.
      await peer.next(f.broadcasts, (m) => m.body.type === 'resync', 'the control node on the bus');
    },
  };
  fixture = fx;
  if (options.started !== false) await fx.start();
  return fx;
}

/** A heartbeat of node `name`'s run `run`. */
const beat = (name: string, run = runOf(name), digest?: string) =>
  peer.ask(control(name, 'node'), { node_id: run, url: `http://${name}.test`, agents: 0, ...(digest !== undefined && { digest }) });

/** An agent connection as a node reports it, with that node's proof unless `proofOf` says whose. */
const agent = (node: string, deviceId: string, generation = 1, proofOf = node) => ({
  device_id: deviceId,
  generation,
  since: Date.now(),
  agent_version: '1.0.0',
  forward_allow: null,
  proof: proof(proofOf, deviceId),
});

const changes = (name: string, online: object[], offline: object[] = [], run = runOf(name)) =>
  peer.tell(control(name, 'presence'), { kind: 'changes', node_id: run, online, offline });

/** Each device's latest presence write. */
function stateOf(f: Fixture): Record<string, string> {
  const state: Record<string, string> = {};
  for (const w of f.writes) state[w.deviceId] = w.kind;
  return state;
}

/** The value of a metric (the sum of its series). */
async function metric(m: Metrics, name: string): Promise<number> {
  return (await m.render())
    .split('\n')
    .filter((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`))
    .reduce((sum, l) => sum + Number(l.split(' ').at(-1)), 0);
}

/** Beats for node `name` every `everyMs` until the returned function is called (and awaited). */
function keepBeating(name: string, everyMs = 125): () => Promise<void> {
  let beating = true;
  const beats = (async () => {
    while (beating) {
      await beat(name);
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return async () => {
    beating = false;
    await beats;
  };
}

/**
 * Waits until the control node handled everything `name` sent before: the answer to a request
 * sent after them on the same connection (NATS keeps one connection's order).
 */
const settled = (name: string, run = runOf(name)) => beat(name, run);

describe('agent proofs (agent-auth)', () => {
  it('takes a node proof made for the very node that asks and the very device, and no other', async () => {
    await makeControl();
    const ask = (node: string, body: object) => peer.ask(control(node, 'agent-auth'), body);
    expect(await ask('edge-a', { device_id: 'dev-1', proof: proof('edge-a', 'dev-1') })).toEqual({ ok: true });
    // edge-b's proof, replayed by edge-a: bound to the other node's name.
    expect(await ask('edge-a', { device_id: 'dev-1', proof: proof('edge-b', 'dev-1') })).toEqual({ ok: false });
    // Another device's proof, and the proof of a device that does not exist.
    expect(await ask('edge-a', { device_id: 'dev-1', proof: proof('edge-a', 'dev-2') })).toEqual({ ok: false });
    expect(await ask('edge-a', { device_id: 'ghost', proof: proof('edge-a', 'ghost') })).toEqual({ ok: false });
    // The key itself is no proof.
    expect(await ask('edge-a', { device_id: 'dev-1', proof: keyOf('dev-1') })).toEqual({ ok: false });
  });

  it('takes a stream proof only for the stream it was made for', async () => {
    await makeControl();
    const ask = (body: object) => peer.ask(control('edge-a', 'agent-auth'), body);
    expect(await ask({ device_id: 'dev-1', stream_id: STREAM_ID, proof: streamProof(keyOf('dev-1'), STREAM_ID) })).toEqual({ ok: true });
    expect(await ask({ device_id: 'dev-1', stream_id: 'b'.repeat(26), proof: streamProof(keyOf('dev-1'), STREAM_ID) })).toEqual({ ok: false });
    expect(await ask({ device_id: 'dev-2', stream_id: STREAM_ID, proof: streamProof(keyOf('dev-1'), STREAM_ID) })).toEqual({ ok: false });
  });
});

describe('presence from a node', () => {
  it("writes an agent online only with the node's own proof; the rest is dropped and counted", async () => {
    const f = await makeControl();
    await beat('edge-a');
    await changes('edge-a', [agent('edge-a', 'dev-1'), agent('edge-a', 'dev-2', 1, 'edge-b'), agent('edge-a', 'ghost')]);
    await settled('edge-a');
    await waitFor(() => f.writes.length > 0, 'a presence write');
    await new Promise((r) => setTimeout(r, 100));
    expect(f.writes).toEqual([expect.objectContaining({ kind: 'online', deviceId: 'dev-1', agentVersion: '1.0.0' })]);
    expect(await metric(f.metrics, 'tether_cluster_refused_total')).toBe(2);
  });

  it("a node cannot end another node's connection, nor one it did not report", async () => {
    const f = await makeControl();
    await beat('edge-a');
    await beat('edge-b');
    await changes('edge-a', [agent('edge-a', 'dev-1', 4)]);
    await changes('edge-b', [], [{ device_id: 'dev-1', generation: 4, at: Date.now() }]);
    await changes('edge-a', [], [{ device_id: 'dev-1', generation: 3, at: Date.now() }]);
    await settled('edge-a');
    await settled('edge-b');
    await new Promise((r) => setTimeout(r, 120));
    expect(stateOf(f)).toEqual({ 'dev-1': 'online' });
    await changes('edge-a', [], [{ device_id: 'dev-1', generation: 4, at: Date.now() }]);
    await waitFor(() => stateOf(f)['dev-1'] === 'offline', 'dev-1 offline');
  });

  it('takes last-seen times only of agents the node holds, and only from its current run', async () => {
    const f = await makeControl();
    await beat('edge-a');
    await changes('edge-a', [agent('edge-a', 'dev-1')]);
    await peer.tell(control('edge-a', 'seen'), {
      node_id: runOf('edge-a'),
      seen: [
        ['dev-1', 1_000],
        ['dev-2', 2_000],
      ],
    });
    await peer.tell(control('edge-a', 'seen'), { node_id: runOf('edge-a', 'b'), seen: [['dev-1', 3_000]] });
    await settled('edge-a');
    expect(f.seen.map((m) => [...m])).toEqual([[['dev-1', 1_000]]]);
  });

  it("a snapshot's last part takes offline the node's agents missing from it, and no one else's", async () => {
    const f = await makeControl();
    await beat('edge-a');
    await beat('edge-b');
    await changes('edge-a', [agent('edge-a', 'dev-1'), agent('edge-a', 'dev-2')]);
    await changes('edge-b', [agent('edge-b', 'dev-3')]);
    await waitFor(() => Object.keys(stateOf(f)).length === 3, 'three devices online');
    const snapshot = (online: object[], last: boolean) =>
      peer.tell(control('edge-a', 'presence'), { kind: 'snapshot', node_id: runOf('edge-a'), snapshot_id: 'snap-1', online, last });
    await snapshot([agent('edge-a', 'dev-1')], false);
    await settled('edge-a');
    await new Promise((r) => setTimeout(r, 120));
    expect(stateOf(f)).toEqual({ 'dev-1': 'online', 'dev-2': 'online', 'dev-3': 'online' }); // not the last part yet
    await snapshot([], true);
    await waitFor(() => stateOf(f)['dev-2'] === 'offline', 'dev-2 offline');
    expect(stateOf(f)).toEqual({ 'dev-1': 'online', 'dev-2': 'offline', 'dev-3': 'online' });
  });
});

describe('runs of a node', () => {
  it('answers a heartbeat only from a run of the node its subject names; the first of a run asks for its presence', async () => {
    await makeControl();
    expect(await beat('edge-a', runOf('edge-b'))).toBe('no answer');
    expect(await beat('edge-a', 'edge-a-short')).toBe('no answer');
    expect(await beat('edge-a')).toEqual({ control_id: CONTROL_RUN, resync: true });
    expect(await beat('edge-a')).toEqual({ control_id: CONTROL_RUN, resync: false });
  });

  it('a new run of a node ends the agents of its earlier run, except those it reports again', async () => {
    const f = await makeControl();
    await beat('edge-a');
    await changes('edge-a', [agent('edge-a', 'dev-1'), agent('edge-a', 'dev-2')]);
    await waitFor(() => Object.keys(stateOf(f)).length === 2, 'two devices online');
    // edge-a started again: its new run reports dev-1 only.
    await beat('edge-a', runOf('edge-a', 'b'));
    await changes('edge-a', [agent('edge-a', 'dev-1', 1)], [], runOf('edge-a', 'b'));
    await waitFor(() => stateOf(f)['dev-2'] === 'offline', 'dev-2 offline');
    await settled('edge-a', runOf('edge-a', 'b'));
    await new Promise((r) => setTimeout(r, 120));
    expect(stateOf(f)).toEqual({ 'dev-1': 'online', 'dev-2': 'offline' });
  });

  it('a late message of an earlier run, still on its way when the new run spoke, changes nothing', async () => {
    const f = await makeControl({ heartbeatMs: 20_000 }); // nobody falls silent while the late beat goes unanswered
    await beat('edge-a');
    await changes('edge-a', [agent('edge-a', 'dev-1')]);
    await beat('edge-a', runOf('edge-a', 'b'));
    await changes('edge-a', [agent('edge-a', 'dev-2', 1)], [], runOf('edge-a', 'b'));
    await waitFor(() => stateOf(f)['dev-2'] === 'online', 'dev-2 online through the new run');
    // The earlier run's heartbeat arrives late: not answered, and the new run keeps its agents.
    expect(await beat('edge-a')).toBe('no answer');
    await settled('edge-a', runOf('edge-a', 'b'));
    expect(stateOf(f)['dev-2']).toBe('online');
    expect(await beat('edge-a', runOf('edge-a', 'b'))).toMatchObject({ resync: false });
  });

  it('asks a node to resend its presence when its digest differs from what it reported on two heartbeats in a row', async () => {
    const f = await makeControl();
    await beat('edge-a');
    await changes('edge-a', [agent('edge-a', 'dev-1', 7)]);
    const right = digestOf([{ deviceId: 'dev-1', generation: 7 }]);
    const wrong = digestOf([]);
    expect(await beat('edge-a', runOf('edge-a'), right)).toMatchObject({ resync: false });
    expect(await beat('edge-a', runOf('edge-a'), wrong)).toMatchObject({ resync: false }); // a report may be in flight
    expect(await beat('edge-a', runOf('edge-a'), right)).toMatchObject({ resync: false }); // it was
    expect(await beat('edge-a', runOf('edge-a'), wrong)).toMatchObject({ resync: false });
    expect(await beat('edge-a', runOf('edge-a'), wrong)).toMatchObject({ resync: true });
    expect(await metric(f.metrics, 'tether_cluster_resyncs_total')).toBe(1);
  });

  it('lets go the agents of a node silent past the deadline, not those of a node that keeps answering', async () => {
    const f = await makeControl({ heartbeatMs: 500 }); // deadline 1 s: edge-b's beats every 125 ms keep it
    await beat('edge-a');
    await beat('edge-b');
    await changes('edge-a', [agent('edge-a', 'dev-1')]);
    await changes('edge-b', [agent('edge-b', 'dev-2')]);
    await waitFor(() => Object.keys(stateOf(f)).length === 2, 'two devices online');
    expect(await metric(f.metrics, 'tether_cluster_nodes')).toBe(3);
    // edge-b keeps beating; edge-a falls silent.
    const stop = keepBeating('edge-b');
    await waitFor(() => stateOf(f)['dev-1'] === 'offline', 'dev-1 offline');
    await stop();
    expect(stateOf(f)).toEqual({ 'dev-1': 'offline', 'dev-2': 'online' });
    expect(await metric(f.metrics, 'tether_cluster_nodes_lost_total')).toBe(1);
    expect(await metric(f.metrics, 'tether_cluster_nodes')).toBe(2);
  });

  it('keeps at most 1,000 nodes: the heartbeat of one more is not answered', async () => {
    const f = await makeControl({ heartbeatMs: 20_000 }); // none of them falls silent meanwhile
    for (let i = 0; i < 1_000; i += 100) {
      const answers = await Promise.all(Array.from({ length: 100 }, (_, j) => beat(`n${i + j}`)));
      expect(answers.every((a) => a.control_id === CONTROL_RUN)).toBe(true);
    }
    expect(await beat('one-more')).toBe('no answer');
    expect(await beat('n0')).toMatchObject({ resync: false }); // a node it keeps is still answered
    expect(await metric(f.metrics, 'tether_cluster_nodes')).toBe(1_001);
    expect(await metric(f.metrics, 'tether_cluster_refused_total')).toBe(1);
  });
});

describe('session streams across nodes', () => {
  const ask = (node: string, verb: string, body: object) => peer.ask(control(node, verb), body);
  const streamAuth = (node: string, ticketDigest = TICKET_DIGEST) => ask(node, 'stream-auth', { session_id: GRANT.sessionId, ticket_digest: ticketDigest });

  it('grants a stream to the credentials the API accepts, as digests', async () => {
    await makeControl();
    expect(await streamAuth('edge-a', 'cd'.repeat(32))).toEqual({ ok: false, code: 4401, reason: 'no valid ticket' });
    expect(await streamAuth('edge-a')).toEqual({ ok: true, grant: GRANT });
  });

  it('sends stream.open only for a stream granted to the asking node: built from its records, signed, through the node that holds the device', async () => {
    const f = await makeControl();
    for (const node of ['edge-a', 'edge-b', 'edge-c']) await beat(node);
    await changes('edge-b', [agent('edge-b', 'dev-1')]);
    await settled('edge-b');
    const commands = await peer.listen('tether.node.>', () => ({ sent: true }));
    const open = (node: string) => ask(node, 'stream-open', { session_id: GRANT.sessionId, stream_id: STREAM_ID });

    expect(await open('edge-a')).toEqual({ sent: false }); // nothing granted yet
    expect(await streamAuth('edge-a')).toMatchObject({ ok: true });
    expect(await open('edge-c')).toEqual({ sent: false }); // granted to edge-a, not to edge-c
    expect(commands).toEqual([]);

    expect(await open('edge-a')).toEqual({ sent: true });
    expect(commands.map((c) => c.subject)).toEqual(['tether.node.edge-b']);
    const { device_id, message } = commands[0]!.body;
    expect(device_id).toBe('dev-1');
    const { sig, ...signed } = message;
    expect(signed).toEqual({
      type: 'stream.open',
      session_id: 'sess-1',
      stream_id: STREAM_ID,
      protocol: 'shell',
      expires_at: FUTURE,
      url: 'http://edge-a.test',
    });
    expect(sig).toBe(streamOpenSignature(keyOf('dev-1'), { device_id: 'dev-1', ...signed }));

    // The session closed: its grants went with it.
    await f.control.relay.sessionClosed({ session_id: GRANT.sessionId, device_id: 'dev-1', close_reason: 'closed' });
    expect(await open('edge-a')).toEqual({ sent: false });
    expect(commands).toHaveLength(1);
  });

  it('takes byte counts and client attachment only for sessions granted to that node', async () => {
    const f = await makeControl();
    await streamAuth('edge-a');
    expect(
      await ask('edge-a', 'bytes', {
        counts: [
          ['sess-1', 10, 20],
          ['sess-2', 5, 5],
        ],
      }),
    ).toEqual({ ok: true });
    expect(await ask('edge-b', 'bytes', { counts: [['sess-1', 1_000, 1_000]] })).toEqual({ ok: true });
    expect(f.bytes.map((m) => [...m])).toEqual([[['sess-1', { toDevice: 10, fromDevice: 20 }]], []]);
    await peer.tell(control('edge-a', 'streams'), { attached: ['sess-1', 'sess-2'], detached: [] });
    await peer.tell(control('edge-b', 'streams'), { attached: [], detached: ['sess-1'] });
    await settled('edge-a');
    await settled('edge-b');
    expect(f.clients).toEqual(['attached sess-1']);
  });

  it('records a stream only of a shell session granted to that node, with the details of its own records', async () => {
    const f = await makeControl();
    await streamAuth('edge-a');
    const recording = (node: string, kind: string, data: Buffer) =>
      peer.tellRaw(control(node, 'recording'), data, { [RECORDING_HEADERS.stream]: STREAM_ID, [RECORDING_HEADERS.kind]: kind });
    const start = Buffer.from(JSON.stringify({ session_id: 'sess-1' }));
    await recording('edge-b', 'start', start); // not granted to edge-b
    await recording('edge-a', 'start', Buffer.from(JSON.stringify({ session_id: 'sess-2' }))); // not granted at all
    await recording('edge-a', 'start', start);
    // One payload record of the device side: [side, kind, length (4 bytes)] then the bytes.
    const payload = Buffer.from('hello from the shell');
    const head = Buffer.from([1, 1, 0, 0, 0, 0]);
    head.writeUInt32BE(payload.length, 2);
    await recording('edge-a', 'frames', Buffer.concat([head, payload]));
    await recording('edge-a', 'end', Buffer.alloc(0));
    await settled('edge-a');
    await settled('edge-b');
    expect(f.recordings).toEqual([{ grant: GRANT, streamId: STREAM_ID, payloads: ['hello from the shell'], ended: true }]);
  });

  it("passes on an agent's refusal only from the node that holds the device", async () => {
    const f = await makeControl();
    await beat('edge-a');
    await beat('edge-b');
    await changes('edge-b', [agent('edge-b', 'dev-1')]);
    await settled('edge-b');
    const refuse = (node: string) => peer.tell(control(node, 'stream-refused'), { device_id: 'dev-1', stream_id: STREAM_ID, message: `from ${node}` });
    await refuse('edge-a');
    await refuse('edge-b');
    await peer.next(f.broadcasts, (m) => m.body.type === 'stream.refused', 'the refusal broadcast');
    await settled('edge-a');
    expect(f.broadcasts.filter((m) => m.body.type === 'stream.refused').map((m) => m.body.message)).toEqual(['from edge-b']);
  });
});

describe('bounds', () => {
  it('drops whole a message of more than 2,000 items, or with a byte count over 2^40', async () => {
    const f = await makeControl();
    await beat('edge-a');
    await streamAuth('edge-a');
    await changes(
      'edge-a',
      Array.from({ length: PART + 1 }, () => agent('edge-a', 'dev-1')),
    );
    expect(await peer.ask(control('edge-a', 'bytes'), { counts: [['sess-1', 2 ** 40 + 1, 0]] })).toBe('no answer');
    await changes(
      'edge-a',
      Array.from({ length: PART }, () => agent('edge-a', 'dev-2')),
    );
    await waitFor(() => f.writes.length > 0, 'a presence write');
    expect(stateOf(f)).toEqual({ 'dev-2': 'online' });
    expect(f.bytes).toEqual([]);
  });

  function streamAuth(node: string) {
    return peer.ask(control(node, 'stream-auth'), { session_id: GRANT.sessionId, ticket_digest: TICKET_DIGEST });
  }
});

describe('broadcasts', () => {
  it('tells every node what it must act on, and holds what it tells while the bus is away until it is back', async () => {
    const f = await makeControl({ started: false });
    expect(f.control.relay.available()).toBe(false); // no session opens without the bus
    f.control.relay.tokenRevoked('tok_1');
    f.control.relay.deviceDeleted('dev-2');
    await f.start();
    expect(f.control.relay.available()).toBe(true);
    expect(f.broadcasts.map((m) => m.body)).toEqual([
      { type: 'token.revoked', token_id: 'tok_1' },
      { type: 'device.deleted', device_id: 'dev-2' },
      { type: 'resync', control_id: CONTROL_RUN },
    ]);
    await f.control.relay.sessionClosed({ session_id: 'sess-1', device_id: 'dev-1', close_reason: 'expired' });
    await peer.next(f.broadcasts, (m) => m.body.type === 'session.closed', 'session.closed');
    expect(f.broadcasts.at(-1)!.body).toEqual({ type: 'session.closed', session_id: 'sess-1', device_id: 'dev-1', reason: 'expired' });
    expect(f.local).toContain('sessionClosed sess-1 expired'); // and its own relay acts at once
  });

  it('after its first start, takes offline the devices online before it that no node claims within the deadline', async () => {
    // A deadline of 2 s: edge-a's report comes well within it, even on a loaded machine.
    const f = await makeControl({ onlineIds: ['dev-1', 'dev-2'], heartbeatMs: 1_000 });
    const stop = keepBeating('edge-a');
    await changes('edge-a', [agent('edge-a', 'dev-1')]);
    await waitFor(() => stateOf(f)['dev-2'] === 'offline', 'dev-2 offline', 5_000);
    await stop();
    expect(stateOf(f)).toEqual({ 'dev-1': 'online', 'dev-2': 'offline' });
  });
});
