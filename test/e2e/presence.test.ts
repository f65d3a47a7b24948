/**
 * Agent presence end to end with real agent processes: online while connected, offline when the
 * process dies or goes silent, back online on reconnect, never offline while connected.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { AGENT_CONNECT_PATH } from '../../shared/protocol/control-channel';
import { AGENT_SUBPROTOCOL } from '../../shared/version';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

// Short, so that silence is found fast; not so short that a loaded machine's late pong drops a live agent (300 ms did).
const HEARTBEAT_MS = 1000;
let stack: Stack;
beforeAll(async () => {
  stack = await startStack({ heartbeatMs: HEARTBEAT_MS });
});
afterAll(() => stack.stop());

/** A bare control connection speaking the agent protocol, as a second agent process would. */
function rawAgent(deviceId: string, token: string, protocol = AGENT_SUBPROTOCOL) {
  const ws = new WebSocket(`${stack.url.replace('http', 'ws')}${AGENT_CONNECT_PATH}`, protocol, {
    headers: { authorization: `Bearer ${token}`, 'x-tether-device-id': deviceId },
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  const refused = new Promise<number>((resolve) =>
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        resolve(res.statusCode ?? 0);
        refusal = body;
      });
    }),
  );
  let refusal = '';
  ws.on('error', () => {});
  return { ws, closed, refused, refusal: () => refusal, opened: new Promise<void>((r) => ws.once('open', () => r())) };
}

describe('presence', () => {
  it('is online while the agent runs, with its version and last_seen_at', async () => {
    const { agent } = await stack.onlineDevice('p-basic');
    const device = (await stack.admin.get('/v1/devices/p-basic')).body.data;
    expect(device).toMatchObject({ device_id: 'p-basic', agent_status: 'online', agent_version: '0.1.0', labels: {} });
    const firstSeen = Date.parse(device.last_seen_at);
    // heartbeats move last_seen_at forward
    await waitFor(
      async () => Date.parse((await stack.admin.get('/v1/devices/p-basic/agent-status')).body.data.last_seen_at) > firstSeen,
      'last_seen_at to advance',
    );
    const list = await stack.admin.get('/v1/devices?agent_status=online');
    expect(list.body.data.map((d: { device_id: string }) => d.device_id)).toContain('p-basic');
    await agent.stop();
    await stack.waitForStatus('p-basic', 'offline', 2000);
  });

  it('goes offline within 2 s when the agent process is killed, and back online when it restarts', async () => {
    const { token, agent } = await stack.onlineDevice('p-kill');
    agent.kill('SIGKILL');
    await stack.waitForStatus('p-kill', 'offline', 2000);
    stack.startAgent('p-kill', token);
    await stack.waitForStatus('p-kill', 'online');
  });

  it('goes offline when a frozen agent misses two heartbeats, online again after it resumes', async () => {
    const { agent } = await stack.onlineDevice('p-frozen');
    agent.kill('SIGSTOP');
    // two missed heartbeats, detected within a quarter interval, plus slack for a loaded machine
    await stack.waitForStatus('p-frozen', 'offline', HEARTBEAT_MS * 2.25 + 2000);
    expect(stack.logs.some((l) => l.includes('missed heartbeats') && l.includes('p-frozen'))).toBe(true);
    agent.kill('SIGCONT');
    await stack.waitForStatus('p-frozen', 'online', 10_000);
  });

  it("a replaced connection's late close never marks the device offline", async () => {
    const token = await stack.addDevice('p-race');
    const first = rawAgent('p-race', token);
    await first.opened;
    await stack.waitForStatus('p-race', 'online');
    const second = rawAgent('p-race', token);
    await second.opened;
    expect(await first.closed).toBe(4409); // replaced by the newer connection
    // well after the old close was handled, the device is still online
    await waitFor(() => stack.logs.some((l) => l.includes('agent connection replaced') && l.includes('p-race')), 'replace log');
    for (let i = 0; i < 5; i++) expect(await stack.agentStatus('p-race')).toBe('online');
    second.ws.close();
    await stack.waitForStatus('p-race', 'offline', 2000);
  });

  it('stays right through rapid reconnect cycles', async () => {
    const token = await stack.addDevice('p-flap');
    let previous = rawAgent('p-flap', token);
    await previous.opened;
    for (let i = 0; i < 20; i++) {
      const next = rawAgent('p-flap', token);
      await next.opened;
      previous.ws.terminate();
      previous = next;
    }
    await waitFor(() => previous.ws.readyState === WebSocket.OPEN, 'last connection open');
    for (let i = 0; i < 5; i++) expect(await stack.agentStatus('p-flap')).toBe('online');
    previous.ws.close();
    await stack.waitForStatus('p-flap', 'offline', 2000);
  });

  it('refuses a wrong token, an unknown device and a wrong protocol version with clear errors', async () => {
    const token = await stack.addDevice('p-auth');
    const wrong = rawAgent('p-auth', 'tdev_wrong');
    expect(await wrong.refused).toBe(401);
    const otherDevice = rawAgent('p-basic', token); // a valid token, but for another device
    expect(await otherDevice.refused).toBe(401);
    const oldAgent = rawAgent('p-auth', token, 'tether.agent.v0');
    expect(await oldAgent.refused).toBe(400);
    expect(JSON.parse(oldAgent.refusal())).toMatchObject({ error: 'unsupported_protocol_version' });
    expect(oldAgent.refusal()).toContain(AGENT_SUBPROTOCOL);
    expect(await stack.agentStatus('p-auth')).toBe('offline');
  });

  it('an agent that sends garbage on the control channel is disconnected', async () => {
    const token = await stack.addDevice('p-garbage');
    const a = rawAgent('p-garbage', token);
    await a.opened;
    a.ws.send('{"type":"launch-missiles"}');
    expect(await a.closed).toBe(4400);
    await stack.waitForStatus('p-garbage', 'offline', 2000);
  });

  it('deleting a device closes its sessions and disconnects its agent', async () => {
    const { agent } = await stack.onlineDevice('p-delete');
    const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'p-delete', protocol: 'diagnostics' })).body.data;
    const res = await stack.admin.del('/v1/devices/p-delete');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ device_id: 'p-delete', deleted: true, sessions_closed: 1 });
    expect((await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data).toMatchObject({
      status: 'closed',
      close_reason: 'device_deleted',
    });
    expect((await stack.admin.get('/v1/devices/p-delete')).status).toBe(404);
    await agent.waitForLine(/this device was deleted/);
    // its token no longer works: said once, after three refusals in a row (up to 1 + 2 + 4 s of backoff)
    await agent.waitForLine(/the server refuses this agent's token \(401\)/, 15_000);
  });
});

describe('device registry', () => {
  it('validates ids and labels, refuses duplicates, 404s unknown ids', async () => {
    const bad = await stack.admin.post('/v1/devices', { device_id: 'has/slash', labels: { site: 7 } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.map((d: { path: string }) => d.path).sort()).toEqual(['device_id', 'labels.site']);
    expect((await stack.admin.post('/v1/devices', { device_id: 'x'.repeat(65) })).status).toBe(400);
    const created = await stack.admin.post('/v1/devices', { device_id: 'r-1', labels: { site: 'lab' } });
    expect(created.status).toBe(201);
    expect(created.body.data).toEqual({ device_id: 'r-1', agent_status: 'offline', agent_token: expect.stringMatching(/^tdev_/) });
    expect((await stack.admin.post('/v1/devices', { device_id: 'r-1' })).status).toBe(409);
    expect((await stack.admin.get('/v1/devices/r-1')).body.data).toEqual({
      device_id: 'r-1',
      agent_status: 'offline',
      last_seen_at: null,
      labels: { site: 'lab' },
      agent_version: null,
      created_at: expect.any(String),
      forward_allow: null,
    });
    for (const path of ['/v1/devices/nope', '/v1/devices/nope/agent-status', '/v1/devices/bad%2Fid']) {
      const res = await stack.admin.get(path);
      expect(res.status, path).toBe(404);
      expect(res.body.error).toBe('not_found');
    }
    const page = await stack.admin.get('/v1/devices?per_page=2&page=1');
    expect(page.body.data).toHaveLength(2);
    expect(page.body.meta).toMatchObject({ page: 1, per_page: 2 });
    expect(JSON.stringify(page.body)).not.toContain('agent_token');
  });
});
