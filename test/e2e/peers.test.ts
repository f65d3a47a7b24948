/**
 * Three `tether server` peers on one PostgreSQL database and one NATS bus (CONTRACT 10.1,
 * docs/peers.md), all real processes with a real agent: racing opens over the three get one 201;
 * a rate limit counts every peer's requests; `websocket_url` names the peer that holds the agent
 * and the stream works there; a client on any peer hears every peer's events; a session opened on
 * a peer that is then SIGKILLed still expires on time, closed by another with its audit event; an
 * Idempotency-Key replays on any peer and an If-Match holds across them; without NATS every peer says it is not ready; the
 * housekeeping peer's SIGKILL is taken over and the agents it held go offline; PostgreSQL stopped
 * under load answers 503, then everything acknowledged is there once it is back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUDIT_LIST_PER_MINUTE } from '../../api/sessions/routes';
import { listenEvents } from '../helpers/events';
import { client } from '../helpers/http';
import { startPeers, type Peers } from '../helpers/peers';
import { startProcess, type Proc } from '../helpers/processes';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let peers: Peers;
const agents: Proc[] = [];

/** Registers `deviceId` and starts its agent against peer `i`; resolves once it is online. */
async function deviceOn(i: number, deviceId: string): Promise<Proc> {
  const created = await peers.admin(0).post('/v1/devices', { device_id: deviceId });
  expect(created.status).toBe(201);
  const agent = startProcess(['agent', '--server', peers.peers[i]!.url, '--device-id', deviceId], { TETHER_DEVICE_TOKEN: created.body.data.agent_token });
  agents.push(agent);
  await waitFor(async () => (await peers.admin(0).get(`/v1/devices/${deviceId}`)).body.data.agent_status === 'online', `${deviceId} online`, 15_000);
  return agent;
}

beforeAll(async () => {
  peers = await startPeers(3, { TETHER_SESSION_IDLE_SECONDS: '600' });
}, 60_000);
afterAll(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await peers?.stop();
});

describe('three peers on PostgreSQL', () => {
  it('share one database: racing opens on three peers give exactly one 201, the others 409 naming its holder', async () => {
    await deviceOn(0, 'race-dev');
    const opens = await Promise.all(
      [0, 1, 2].map((i) => peers.admin(i).post('/v1/remote-access/sessions', { device_id: 'race-dev', protocol: 'diagnostics' })),
    );
    expect(opens.map((r) => r.status).sort()).toEqual([201, 409, 409]);
    for (const r of opens.filter((o) => o.status === 409)) expect(r.body.holder).toMatchObject({ opened_by: 'admin' });
    const winner = opens.find((r) => r.status === 201)!.body.data;
    // every peer reads the same session, and closes it once
    for (const i of [0, 1, 2]) expect((await peers.admin(i).get(`/v1/remote-access/sessions/${winner.session_id}`)).body.data.status).toBe('open');
    expect((await peers.admin(2).del(`/v1/remote-access/sessions/${winner.session_id}`)).status).toBe(200);
    expect((await peers.admin(1).del(`/v1/remote-access/sessions/${winner.session_id}`)).status).toBe(404);
  });

  it('replays an Idempotency-Key on any peer: one device, the same answer', async () => {
    const key = { 'idempotency-key': 'peers-key-1' };
    const first = await peers.admin(0).post('/v1/devices', { device_id: 'idem-dev' }, key);
    const again = await Promise.all([1, 2].map((i) => peers.admin(i).post('/v1/devices', { device_id: 'idem-dev' }, key)));
    expect(first.status).toBe(201);
    for (const r of again) {
      expect(r.status).toBe(201);
      expect(r.body).toEqual(first.body); // the same agent token, shown once more to the same caller
    }
    expect((await peers.admin(1).get('/v1/devices?per_page=100')).body.data.filter((d: { device_id: string }) => d.device_id === 'idem-dev')).toHaveLength(1);
  });

  it('holds If-Match across peers: a tag read on one peer guards a write on another, and a stale one is 412 on a third', async () => {
    expect((await peers.admin(0).post('/v1/devices', { device_id: 'tagged-dev' })).status).toBe(201);
    const tag = (await peers.admin(0).get('/v1/devices/tagged-dev')).headers.get('etag')!;
    expect((await peers.admin(2).get('/v1/devices/tagged-dev')).headers.get('etag')).toBe(tag); // the same resource, the same tag
    const rotated = await peers.admin(1).post('/v1/devices/tagged-dev/agent-token', {}, { 'if-match': tag });
    expect(rotated.status).toBe(200);
    const stale = await peers.admin(2).post('/v1/devices/tagged-dev/agent-token', {}, { 'if-match': tag });
    expect(stale.status).toBe(412);
    expect(stale.headers.get('etag')).toBe((await peers.admin(0).get('/v1/devices/tagged-dev')).headers.get('etag'));
  });

  it("counts a user's rate limit over every peer", async () => {
    const made = await peers.admin(0).post('/v1/users', { username: 'limited', role: 'developer' });
    expect(made.status).toBe(201);
    const token = (await peers.admin(0).post('/v1/tokens', { username: 'limited' })).body.data.token as string;
    const statuses: number[] = [];
    for (let n = 0; n < AUDIT_LIST_PER_MINUTE + 3; n++) statuses.push((await client(peers.peers[n % 3]!.url, token).get('/v1/audit/remote-access')).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(AUDIT_LIST_PER_MINUTE);
    expect(statuses.slice(AUDIT_LIST_PER_MINUTE)).toEqual([429, 429, 429]);
  });

  it("names the peer that holds the agent in websocket_url, and the stream works there; every peer's events reach a client on any", async () => {
    const listener = await listenEvents(peers.peers[2]!.url, { authorization: `Bearer ${peers.adminToken}` });
    await deviceOn(1, 'held-on-b');
    const opened = await peers.admin(0).post('/v1/remote-access/sessions', { device_id: 'held-on-b', protocol: 'diagnostics' });
    expect(opened.status).toBe(201);
    const s = opened.body.data;
    expect(new URL(s.websocket_url).port).toBe(String(peers.peers[1]!.port));
    const stream = connectStream(s.websocket_url);
    await stream.opened;
    expect((await stream.request('system.info')).ok).toBe(true);
    stream.ws.close();
    // peer c heard peer b's agent and peer a's session
    await waitFor(() => listener.events.some((e) => e.event === 'agent.online' && e.data.device_id === 'held-on-b'), 'agent.online from peer b');
    await waitFor(() => listener.events.some((e) => e.event === 'session.opened' && e.data.session_id === s.session_id), 'session.opened from peer a');
    listener.close();
  });

  it('a session opened on a peer that is SIGKILLed still expires on time, closed once by another peer', async () => {
    await deviceOn(0, 'orphan-dev');
    const opener = await peers.startPeer('peer-d');
    const opened = await client(opener.url, peers.adminToken).post('/v1/remote-access/sessions', {
      device_id: 'orphan-dev',
      protocol: 'diagnostics',
      ttl_seconds: 60,
    });
    expect(opened.status).toBe(201);
    const s = opened.body.data;
    opener.proc.kill('SIGKILL');
    await opener.proc.exited;
    const closed = await waitFor(
      async () => {
        const row = (await peers.admin(1).get(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
        return row.status === 'closed' ? row : undefined;
      },
      'the session to expire',
      75_000,
      500,
    );
    expect(closed.close_reason).toBe('expired');
    // on time: at its expiry, give or take the 5 s sweep
    expect(Date.parse(closed.closed_at) - Date.parse(s.expires_at)).toBeGreaterThanOrEqual(0);
    expect(Date.parse(closed.closed_at) - Date.parse(s.expires_at)).toBeLessThan(6_000);
    const audit = (await peers.admin(2).get(`/v1/audit/remote-access?session_id=${s.session_id}`)).body.data.map((e: { event: string }) => e.event);
    expect(audit.sort()).toEqual(['session.expired', 'session.opened']);
  }, 90_000);

  it('PostgreSQL stopped under load: 503 unavailable meanwhile, then every acknowledged write is there', async () => {
    const acknowledged: string[] = [];
    const refused: number[] = [];
    let n = 0;
    let running = true;
    const load = (async () => {
      while (running) {
        const id = `load-${n++}`;
        const r = await peers.admin(n % 3).post('/v1/devices', { device_id: id });
        if (r.status === 201) acknowledged.push(id);
        else refused.push(r.status);
      }
    })();
    await waitFor(() => acknowledged.length >= 5, 'writes before the stop');
    await peers.postgres.stop();
    try {
      await waitFor(async () => (await fetch(`${peers.peers[0]!.url}/readyz`)).status === 503, 'readyz 503');
      const down = await peers.admin(1).get('/v1/devices?per_page=1');
      expect(down.status).toBe(503);
      expect(down.body.error).toBe('unavailable');
      expect(down.headers.get('retry-after')).toBe('2');
    } finally {
      await peers.postgres.start();
    }
    await waitFor(async () => (await fetch(`${peers.peers[0]!.url}/readyz`)).status === 200, 'readyz 200 again', 15_000);
    const after = acknowledged.length;
    await waitFor(() => acknowledged.length >= after + 5, 'writes after the start');
    running = false;
    await load;
    expect(refused.length).toBeGreaterThan(0);
    expect(new Set(refused)).toEqual(new Set([503]));
    for (const id of acknowledged) expect((await peers.admin(2).get(`/v1/devices/${id}`)).status, id).toBe(200);
  }, 60_000);

  it('NATS away: every peer says not ready, and is ready again once it is back', async () => {
    await peers.nats.kill();
    try {
      for (const p of peers.peers) await waitFor(async () => (await fetch(`${p.url}/readyz`)).status === 503, `${p.name} not ready`);
      const body = await (await fetch(`${peers.peers[0]!.url}/readyz`)).json();
      expect(body).toEqual({ status: 'not ready', database: 'open', nats: 'disconnected' });
    } finally {
      await peers.nats.restart();
    }
    for (const p of peers.peers) await waitFor(async () => (await fetch(`${p.url}/readyz`)).status === 200, `${p.name} ready again`, 20_000);
  }, 40_000);

  it('the housekeeping peer SIGKILLed: another takes over within seconds, and clears the presence of the agents it held', async () => {
    const leader = peers.peers.find((p) => p.proc.stderr.some((l) => l.includes('this peer does the housekeeping now')))!;
    expect(leader).toBeDefined();
    const i = peers.peers.indexOf(leader);
    await deviceOn(i, 'held-by-leader');
    leader.proc.kill('SIGKILL');
    await leader.proc.exited;
    const others = peers.peers.filter((p) => p !== leader);
    await waitFor(() => others.find((p) => p.proc.stderr.some((l) => l.includes('this peer does the housekeeping now'))), 'another leader', 10_000);
    const admin = client(others[0]!.url, peers.adminToken);
    await waitFor(async () => (await admin.get('/v1/devices/held-by-leader')).body.data.agent_status === 'offline', 'its agent offline', 20_000);
  }, 40_000);
});
