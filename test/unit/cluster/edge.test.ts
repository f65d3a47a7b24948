/**
 * An edge node (cluster/edge.ts) on a real nats-server, with the test playing the control node:
 * what the edge asks and sends, and what it keeps. Agents are vouched for with the node's proof
 * (never the token) and clients with digests (never the ticket or token); answers are cached a
 * short while and dropped by the broadcasts that change them; presence goes as batched changes
 * and, when the control node may have missed some, as a snapshot; byte counts go until they are
 * acknowledged; an edge cut from the bus lets its agents go. The relay is the port the
 * composition root fills, here a record of what the edge asked of it.
 */
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBus } from '../../../cluster/bus';
import { createEdge } from '../../../cluster/edge';
import { digestOf } from '../../../cluster/holders';
import { agentKey, nodeAgentProof } from '../../../shared/auth/agent-proofs';
import { BROADCAST_SUBJECT, PART } from '../../../shared/protocol/cluster';
import { sha256Hex } from '../../../shared/ids';
import { silentLogger } from '../../../shared/log';
import { createMetrics } from '../../../shared/metrics';
import type { StreamGrant } from '../../../shared/protocol/session-stream';
import { ticketDigest } from '../../../shared/auth/tickets';
import { busPeer, type BusPeer, type Received } from '../../helpers/bus-peer';
import { startNats, type NatsServer } from '../../helpers/nats';
import { waitFor } from '../../helpers/wait';

/** Deadline 400 ms; the edge beats every 100 ms. */
const HEARTBEAT_MS = 200;
const NODE = 'edge-a';
const RUN = 'edge-a-aaaaaaaa';
const CONTROL_RUN = 'control-cccccccc';
const FUTURE = new Date(Date.now() + 3_600_000).toISOString();
const grantOf = (over: Partial<StreamGrant> = {}): StreamGrant => ({ sessionId: 'sess-1', deviceId: 'dev-1', protocol: 'shell', expiresAt: FUTURE, ...over });

type Edge = ReturnType<typeof createEdge>;
/** The relay port an edge is started with (cluster/: what a node needs of its relay). */
type LocalRelay = Parameters<Edge['start']>[0];
type HeldAgent = ReturnType<LocalRelay['agents']> extends Iterable<infer A> ? A : never;

let nats: NatsServer;
beforeAll(async () => {
  nats = await startNats({ open: true });
});

/** How the test, as the control node, answers each verb (undefined: no answer, the request times out). */
type Answers = Record<string, (m: Received) => unknown>;

interface Fixture {
  edge: Edge;
  /** Everything the edge sent the control node, by verb. */
  sent: Received[];
  answers: Answers;
  agents: HeldAgent[];
  /** What the edge asked of its relay. */
  calls: string[];
  /** Devices whose agents are connected here. */
  here: Set<string>;
  of(verb: string): Received[];
}

let peer: BusPeer;
let fixture: Fixture | undefined;
beforeEach(async () => {
  peer = await busPeer(nats.url);
});
afterEach(async () => {
  await fixture?.edge.close();
  fixture = undefined;
  await peer.close();
});

async function startEdge(options: { natsUrl?: string; peer?: BusPeer } = {}): Promise<Fixture> {
  const p = options.peer ?? peer;
  const answers: Answers = {
    node: () => ({ control_id: CONTROL_RUN, resync: false }),
    'agent-auth': () => ({ ok: true }),
    'stream-auth': () => ({ ok: true, grant: grantOf() }),
    bytes: () => ({ ok: true }),
    'stream-open': () => ({ sent: true }),
  };
  const sent = await p.listen(`tether.control.${NODE}.>`, (m) => answers[m.subject.split('.')[3]!]?.(m));
  const calls: string[] = [];
  const here = new Set<string>();
  const agents: HeldAgent[] = [];
  const localRelay: LocalRelay = {
    sendToAgent: (deviceId, msg) => (calls.push(`sendToAgent ${deviceId} ${msg.type}`), here.has(deviceId)),
    sessionOpened: (s) => void calls.push(`sessionOpened ${s.session_id}`),
    sessionClosed: (s) => void calls.push(`sessionClosed ${s.session_id} ${s.close_reason}`),
    deviceDeleted: (id) => void calls.push(`deviceDeleted ${id}`),
    agentTokenRotated: (id) => void calls.push(`agentTokenRotated ${id}`),
    tokenRevoked: (id) => void calls.push(`tokenRevoked ${id}`),
    streamRefused: (deviceId, streamId) => (calls.push(`streamRefused ${deviceId} ${streamId}`), false),
    agents: () => agents,
    agentCount: () => agents.length,
    disconnectAgents: (code, reason) => void calls.push(`disconnectAgents ${code} ${reason}`),
  };
  let edge: Edge;
  const bus = createBus({
    url: options.natsUrl ?? nats.url,
    nodeName: NODE,
    name: `tether-${RUN}`,
    log: silentLogger,
    onUp: () => edge.busUp(),
    onDown: () => edge.busDown(),
  });
  edge = createEdge({
    bus,
    nodeName: NODE,
    nodeId: RUN,
    publicUrl: 'http://edge-a.test',
    heartbeatMs: HEARTBEAT_MS,
    log: silentLogger,
    metrics: createMetrics(),
  });
  const f: Fixture = { edge, sent, answers, agents, calls, here, of: (verb) => sent.filter((m) => m.subject === `tether.control.${NODE}.${verb}`) };
  fixture = f;
  edge.start(localRelay);
  // On the bus, and heard: its first heartbeat was answered and its first snapshot sent.
  await p.next(sent, (m) => m.body?.kind === 'snapshot', 'the first snapshot');
  return f;
}

const presenceOf = (f: Fixture, kind: string) => f.of('presence').filter((m) => m.body.kind === kind);

/** Broadcasts as the control node, and waits until the edge acted on it (its relay was told). */
async function broadcast(f: Fixture, body: object, brokerCall: string): Promise<void> {
  await peer.tell(BROADCAST_SUBJECT, body);
  await waitFor(() => f.calls.includes(brokerCall), brokerCall, 5_000, 5);
}

describe('agents vouched for by the control node', () => {
  it("sends the node's proof, never the token; keeps a yes a while; asks again once a broadcast changed the answer", async () => {
    const f = await startEdge();
    const auth = f.edge.relayDeps.authenticateAgent;
    expect(await auth('dev-1', { token: 'tdev_secret' })).toBe(true);
    expect(f.of('agent-auth').map((m) => m.body)).toEqual([{ device_id: 'dev-1', proof: nodeAgentProof(agentKey('tdev_secret'), NODE, 'dev-1') }]);
    expect(f.sent.some((m) => Buffer.from(m.data).toString().includes('tdev_secret'))).toBe(false);

    expect(await auth('dev-1', { token: 'tdev_secret' })).toBe(true);
    expect(f.of('agent-auth')).toHaveLength(1); // kept

    await broadcast(f, { type: 'device.token_rotated', device_id: 'dev-1' }, 'agentTokenRotated dev-1');
    f.answers['agent-auth'] = () => ({ ok: false });
    expect(await auth('dev-1', { token: 'tdev_secret' })).toBe(false);
    expect(await auth('dev-1', { token: 'tdev_secret' })).toBe(false);
    expect(f.of('agent-auth')).toHaveLength(3); // a no is not kept

    f.answers['agent-auth'] = () => ({ ok: true });
    expect(await auth('dev-2', { token: 'tdev_two' })).toBe(true);
    await broadcast(f, { type: 'device.deleted', device_id: 'dev-2' }, 'deviceDeleted dev-2');
    expect(await auth('dev-2', { token: 'tdev_two' })).toBe(true);
    expect(f.of('agent-auth')).toHaveLength(5);
  });

  it("passes a data stream's proof on as it came, every time", async () => {
    const f = await startEdge();
    const credential = { streamId: 'a'.repeat(26), proof: 'p'.repeat(64) };
    expect(await f.edge.relayDeps.authenticateAgent('dev-1', credential)).toBe(true);
    expect(await f.edge.relayDeps.authenticateAgent('dev-1', credential)).toBe(true);
    expect(f.of('agent-auth').map((m) => m.body)).toEqual([
      { device_id: 'dev-1', proof: credential.proof, stream_id: credential.streamId },
      { device_id: 'dev-1', proof: credential.proof, stream_id: credential.streamId },
    ]);
  });

  it('fails, rather than guesses, when the control node does not answer', async () => {
    const f = await startEdge();
    delete f.answers['agent-auth'];
    await expect(f.edge.relayDeps.authenticateAgent('dev-1', { token: 'tdev_secret' })).rejects.toThrow(/no answer/);
  });
});

describe('stream grants', () => {
  it('asks with digests of the ticket and the bearer token, never the secrets themselves', async () => {
    const f = await startEdge();
    await f.edge.relayDeps.authorizeStream('sess-1', { ticket: 'tkt_secret' });
    await f.edge.relayDeps.authorizeStream('sess-1', { bearer: 'tth_secret' });
    expect(f.of('stream-auth').map((m) => m.body)).toEqual([
      { session_id: 'sess-1', ticket_digest: ticketDigest('tkt_secret') },
      { session_id: 'sess-1', bearer_digest: sha256Hex('tth_secret') },
    ]);
    expect(f.sent.some((m) => /tkt_secret|tth_secret/.test(Buffer.from(m.data).toString()))).toBe(false);
  });

  it('reuses a grant for the same credentials only, and drops it when its session closes or its token is revoked', async () => {
    const f = await startEdge();
    const authorize = f.edge.relayDeps.authorizeStream;
    expect(await authorize('sess-1', { ticket: 't1' })).toEqual({ ok: true, grant: grantOf() });
    expect(await authorize('sess-1', { ticket: 't1' })).toEqual({ ok: true, grant: grantOf() });
    expect(f.of('stream-auth')).toHaveLength(1);
    await authorize('sess-1', { ticket: 't2' }); // other credentials: asked
    expect(f.of('stream-auth')).toHaveLength(2);

    await broadcast(f, { type: 'session.closed', session_id: 'sess-1', device_id: 'dev-1', reason: 'closed' }, 'sessionClosed sess-1 closed');
    f.answers['stream-auth'] = () => ({ ok: false, code: 4404, reason: 'the session is closed' });
    expect(await authorize('sess-1', { ticket: 't1' })).toEqual({ ok: false, code: 4404, reason: 'the session is closed' });
    await authorize('sess-1', { ticket: 't1' });
    expect(f.of('stream-auth')).toHaveLength(4); // a refusal is not kept

    f.answers['stream-auth'] = () => ({ ok: true, grant: grantOf({ sessionId: 'sess-2', tokenId: 'tok_1' }) });
    await authorize('sess-2', { bearer: 'tth_one' });
    await authorize('sess-2', { bearer: 'tth_one' });
    expect(f.of('stream-auth')).toHaveLength(5);
    await broadcast(f, { type: 'token.revoked', token_id: 'tok_1' }, 'tokenRevoked tok_1');
    await authorize('sess-2', { bearer: 'tth_one' });
    expect(f.of('stream-auth')).toHaveLength(6);
  });

  it("never uses a kept grant past its session's expiry or its token's", async () => {
    const f = await startEdge();
    const soon = () => new Date(Date.now() + 200).toISOString();
    f.answers['stream-auth'] = () => ({ ok: true, grant: grantOf({ expiresAt: soon() }) });
    await f.edge.relayDeps.authorizeStream('sess-1', { ticket: 't1' });
    f.answers['stream-auth'] = () => ({ ok: true, grant: grantOf({ tokenExpiresAt: soon() }) });
    await f.edge.relayDeps.authorizeStream('sess-1', { bearer: 'tth_one' });
    await new Promise((r) => setTimeout(r, 300));
    await f.edge.relayDeps.authorizeStream('sess-1', { ticket: 't1' });
    await f.edge.relayDeps.authorizeStream('sess-1', { bearer: 'tth_one' });
    expect(f.of('stream-auth')).toHaveLength(4);
  });
});

describe('presence', () => {
  const held = (deviceId: string, generation = 1): HeldAgent => ({ deviceId, generation, since: 1_000, agentVersion: '1.0.0', forwardAllow: null });

  it("reports its agents as batched changes, each online with the node's proof (none for an agent it never vouched for)", async () => {
    const f = await startEdge();
    await f.edge.relayDeps.authenticateAgent('dev-1', { token: 'tdev_one' });
    const sink = f.edge.relayDeps.presence;
    sink.online('dev-1', '1.0.0', 5_000, ['127.0.0.1:*'], 3);
    sink.online('dev-9', null, 5_000, null, 1);
    sink.offline('dev-2', 6_000, 2);
    const [changes] = await waitFor(() => (presenceOf(f, 'changes').length > 0 ? presenceOf(f, 'changes') : undefined), 'a presence change');
    expect(changes!.body).toEqual({
      kind: 'changes',
      node_id: RUN,
      online: [
        {
          device_id: 'dev-1',
          generation: 3,
          since: 5_000,
          agent_version: '1.0.0',
          forward_allow: ['127.0.0.1:*'],
          proof: nodeAgentProof(agentKey('tdev_one'), NODE, 'dev-1'),
        },
        { device_id: 'dev-9', generation: 1, since: 5_000, agent_version: null, forward_allow: null, proof: '' },
      ],
      offline: [{ device_id: 'dev-2', generation: 2, at: 6_000 }],
    });
  });

  it('beats with the digest of the connections it holds', async () => {
    const f = await startEdge();
    f.agents.push(held('dev-1', 4), held('dev-2', 9));
    const beat = await peer.next(f.sent, (m) => m.subject.endsWith('.node') && m.body.agents === 2, 'a heartbeat with two agents');
    expect(beat.body).toEqual({
      node_id: RUN,
      url: 'http://edge-a.test',
      agents: 2,
      digest: digestOf([
        { deviceId: 'dev-1', generation: 4 },
        { deviceId: 'dev-2', generation: 9 },
      ]),
    });
  });

  it('sends a snapshot in parts when the control node asks for one, when the control node changed, and on a resync broadcast', async () => {
    const f = await startEdge();
    for (let i = 0; i < PART + 5; i++) f.agents.push(held(`dev-${i}`));
    const snapshots = () => presenceOf(f, 'snapshot').filter((m) => m.body.online.length > 0 || m.body.last);
    const after = (n: number, why: string) => waitFor(() => (snapshots().length >= n + 2 ? snapshots().slice(n) : undefined), why);

    let seen = snapshots().length;
    f.answers.node = () => ({ control_id: CONTROL_RUN, resync: true });
    const [first, second] = await after(seen, 'a snapshot the control node asked for');
    f.answers.node = () => ({ control_id: CONTROL_RUN, resync: false });
    expect(first!.body).toMatchObject({ kind: 'snapshot', node_id: RUN, last: false });
    expect(first!.body.online).toHaveLength(PART);
    expect(second!.body).toMatchObject({ kind: 'snapshot', snapshot_id: first!.body.snapshot_id, last: true });
    expect(second!.body.online).toHaveLength(5);
    expect([...first!.body.online, ...second!.body.online].map((a: { device_id: string }) => a.device_id)).toEqual(f.agents.map((a) => a.deviceId));

    await new Promise((r) => setTimeout(r, 3 * HEARTBEAT_MS)); // the answers said no more
    seen = snapshots().length;
    f.answers.node = () => ({ control_id: 'control-dddddddd', resync: false }); // a new control node
    await after(seen, 'a snapshot for a new control node');

    await new Promise((r) => setTimeout(r, 3 * HEARTBEAT_MS));
    seen = snapshots().length;
    await peer.tell(BROADCAST_SUBJECT, { type: 'resync', control_id: 'control-dddddddd' });
    await after(seen, 'a snapshot after a resync broadcast');
  });

  it('tells which session streams have clients here, batched', async () => {
    const f = await startEdge();
    const clients = f.edge.relayDeps.streamClients;
    clients.attached('sess-1');
    clients.attached('sess-2');
    clients.detached('sess-2');
    const [m] = await waitFor(() => (f.of('streams').length > 0 ? f.of('streams') : undefined), 'a streams message');
    expect(m!.body).toEqual({ attached: ['sess-1'], detached: ['sess-2'] });
  });
});

describe('byte counts', () => {
  it('are sent until the control node acknowledges them: counts not acknowledged go again with the next', async () => {
    const f = await startEdge();
    delete f.answers.bytes; // the first report goes unanswered
    f.edge.relayDeps.recordBytes(new Map([['sess-1', { toDevice: 10, fromDevice: 20 }]]));
    await peer.next(f.sent, (m) => m.subject.endsWith('.bytes'), 'a byte report', 3_000);
    f.answers.bytes = () => ({ ok: true });
    f.edge.relayDeps.recordBytes(
      new Map([
        ['sess-1', { toDevice: 1, fromDevice: 2 }],
        ['sess-2', { toDevice: 5, fromDevice: 0 }],
      ]),
    );
    const again = await waitFor(() => f.of('bytes')[1], 'the report again', 6_000);
    expect(again.body.counts.sort()).toEqual([
      ['sess-1', 11, 22],
      ['sess-2', 5, 0],
    ]);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(f.of('bytes')).toHaveLength(2); // acknowledged: not sent again
  });
});

describe('commands and broadcasts from the control node', () => {
  it('acts on every broadcast with its localRelay, and drops a malformed one', async () => {
    const f = await startEdge();
    await peer.tell(BROADCAST_SUBJECT, { type: 'device.deleted' }); // no device id
    await peer.tell(BROADCAST_SUBJECT, { type: 'session.opened', session_id: 'sess-1', device_id: 'dev-1', protocol: 'shell', expires_at: FUTURE });
    await peer.tell(BROADCAST_SUBJECT, { type: 'session.closed', session_id: 'sess-1', device_id: 'dev-1', reason: 'expired' });
    await peer.tell(BROADCAST_SUBJECT, { type: 'token.revoked', token_id: 'tok_1' });
    await peer.tell(BROADCAST_SUBJECT, { type: 'device.token_rotated', device_id: 'dev-2' });
    await peer.tell(BROADCAST_SUBJECT, { type: 'stream.refused', device_id: 'dev-3', stream_id: 'str-1', message: 'busy' });
    await broadcast(f, { type: 'device.deleted', device_id: 'dev-4' }, 'deviceDeleted dev-4');
    expect(f.calls).toEqual([
      'sessionOpened sess-1',
      'sessionClosed sess-1 expired',
      'tokenRevoked tok_1',
      'agentTokenRotated dev-2',
      'streamRefused dev-3 str-1',
      'deviceDeleted dev-4',
    ]);
  });

  it('delivers a command to an agent it holds, and says so; not for an agent it does not hold', async () => {
    const f = await startEdge();
    f.here.add('dev-1');
    const open = {
      type: 'stream.open',
      session_id: 'sess-1',
      stream_id: 'a'.repeat(26),
      protocol: 'shell',
      expires_at: FUTURE,
      url: 'http://edge-b.test',
      sig: 's'.repeat(64),
    };
    expect(await peer.ask(`tether.node.${NODE}`, { type: 'agent.send', device_id: 'dev-1', message: open })).toEqual({ sent: true });
    expect(await peer.ask(`tether.node.${NODE}`, { type: 'agent.send', device_id: 'ghost', message: open })).toEqual({ sent: false });
    expect(f.calls).toEqual(['sendToAgent dev-1 stream.open', 'sendToAgent ghost stream.open']);
  });

  it('asks the control node to open a stream elsewhere with the session and stream ids only, and passes a refusal on, cut short', async () => {
    const f = await startEdge();
    f.answers['stream-open'] = () => ({ sent: false });
    const open = {
      type: 'stream.open' as const,
      session_id: 'sess-1',
      stream_id: 'a'.repeat(26),
      protocol: 'shell' as const,
      expires_at: FUTURE,
      url: 'http://elsewhere.test',
      targets: ['10.0.0.1:22'],
    };
    expect(await f.edge.relayDeps.routeStream('dev-1', open)).toBe(false);
    expect(f.of('stream-open').map((m) => m.body)).toEqual([{ session_id: 'sess-1', stream_id: 'a'.repeat(26) }]);
    f.edge.relayDeps.onStreamRefusedElsewhere('dev-1', 'a'.repeat(26), 'x'.repeat(500));
    const [refused] = await waitFor(() => (f.of('stream-refused').length > 0 ? f.of('stream-refused') : undefined), 'the refusal');
    expect(refused!.body).toEqual({ device_id: 'dev-1', stream_id: 'a'.repeat(26), message: 'x'.repeat(200) });
  });
});

describe('stopping and losing the bus', () => {
  it('sends the presence and byte counts still waiting when it closes', async () => {
    const f = await startEdge();
    f.edge.relayDeps.presence.offline('dev-1', 7_000, 1);
    f.edge.relayDeps.recordBytes(new Map([['sess-1', { toDevice: 3, fromDevice: 4 }]]));
    await f.edge.close();
    await peer.nc.flush();
    expect(presenceOf(f, 'changes').map((m) => m.body.offline)).toEqual([[{ device_id: 'dev-1', generation: 1, at: 7_000 }]]);
    expect(f.of('bytes').map((m) => m.body.counts)).toEqual([[['sess-1', 3, 4]]]);
  });

  it('lets its agents go once cut from the bus for longer than the deadline, not before', async () => {
    const own = await startNats({ open: true });
    const p = await busPeer(own.url);
    const f = await startEdge({ natsUrl: own.url, peer: p });
    f.agents.push(held('dev-1'));
    const cutAt = performance.now();
    await own.kill();
    await waitFor(() => f.calls.some((c) => c.startsWith('disconnectAgents')), 'the agents let go', 5_000, 5);
    expect(performance.now() - cutAt).toBeGreaterThanOrEqual(2 * HEARTBEAT_MS);
    expect(f.calls).toEqual(['disconnectAgents 1001 this node lost its cluster; reconnect to another']);
    expect(f.edge.up()).toBe(false);
    await p.close().catch(() => {});
  });

  function held(deviceId: string): HeldAgent {
    return { deviceId, generation: 1, since: 1_000, agentVersion: null, forwardAllow: null };
  }
});
