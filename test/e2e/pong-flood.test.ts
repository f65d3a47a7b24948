/**
 * Ping floods from peers that never read: every ping asks for a pong, and a server that answers
 * each one into a socket nobody reads queues pongs without bound (151 MB of pings once grew a
 * server from 183 to 644 MiB, for good). A real server process is flooded on a session stream
 * (the relay's own hop) and on the agent control channel (ws); its resident memory must stay
 * flat, and it must go on serving.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CONNECT_PATH, AGENT_HEADERS } from '../../shared/protocol/control-channel';
import { AGENT_SUBPROTOCOL } from '../../shared/version';
import { client, type Client } from '../helpers/http';
import { floodPings, LAST_PING } from '../helpers/ping-flood';
import { startProcess, startServerProcess, type Proc } from '../helpers/processes';
import { encodeFrame, OPCODE, rawUpgrade } from '../helpers/raw-ws';
import { tempDir } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const MiB = 1024 * 1024;

let server: Awaited<ReturnType<typeof startServerProcess>>;
let admin: Client;
let agent: Proc;

beforeAll(async () => {
  const dataDir = tempDir();
  server = await startServerProcess(dataDir);
  admin = client(server.url, readFileSync(join(dataDir, 'admin.token'), 'utf8').trim());
  const device = (await admin.post('/v1/devices', { device_id: 'pinged' })).body.data;
  agent = startProcess(['agent', '--server', server.url, '--device-id', 'pinged'], { TETHER_DEVICE_TOKEN: device.agent_token });
  await waitFor(async () => (await admin.get('/v1/devices/pinged')).body.data.agent_status === 'online', 'the agent online');
});
afterAll(async () => {
  await agent?.stop();
  await server?.proc.stop();
});

const rss = (): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${server.proc.pid}/status`, 'utf8'))![1]) * 1024;

/**
 * Sends 150 MiB of pings on `socket` (as the attack did) or until the server stops reading them;
 * resolves with the bytes sent and how much the server's resident memory grew at its highest.
 */
async function floodServer(socket: Socket): Promise<{ sent: number; grown: number }> {
  const before = rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50);
  try {
    const { sent } = await floodPings(socket, { masked: true, bytes: 150 * MiB, stallMs: 3000 });
    await new Promise((r) => setTimeout(r, 500)); // what the server read last is dealt with by then
    peak = Math.max(peak, rss());
    console.info(`sent ${(sent / MiB).toFixed(0)} MiB of pings; server RSS ${(before / MiB).toFixed(0)} -> ${(peak / MiB).toFixed(0)} MiB at most`);
    return { sent, grown: peak - before };
  } finally {
    clearInterval(sampler);
  }
}

describe('a peer that pings and never reads', () => {
  it("on a session stream leaves the server's memory flat, and gets the pong of its latest ping once it reads", async () => {
    const s = (await admin.post('/v1/remote-access/sessions', { device_id: 'pinged', protocol: 'diagnostics' })).body.data;
    const url = new URL(s.websocket_url);
    const ws = await rawUpgrade(server.port, `${url.pathname}${url.search}`);
    expect(ws.status).toBe(101);
    // The device has joined once a request is answered: from then on the server reads our frames.
    await ws.writePieces([encodeFrame({ opcode: OPCODE.text, payload: Buffer.from(JSON.stringify({ id: 1, op: 'system.info', params: {} })) })]);
    await ws.waitForFrame((f) => f.opcode === OPCODE.text && JSON.parse(f.payload.toString()).id === 1, 'the answer');
    ws.socket.pause(); // and never read again
    const { sent, grown } = await floodServer(ws.socket);
    expect(grown, `the server grew ${(grown / MiB).toFixed(0)} MiB while ${(sent / MiB).toFixed(0)} MiB of pings were sent`).toBeLessThan(64 * MiB);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    ws.socket.resume();
    await ws.waitForFrame((f) => f.opcode === OPCODE.pong && f.payload.equals(LAST_PING), 'the pong of the last ping', 30_000);
    ws.socket.destroy();
    await admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it("on the agent control channel leaves the server's memory flat: the agent is dropped", async () => {
    const device = (await admin.post('/v1/devices', { device_id: 'ping-flooder' })).body.data;
    const ws = await rawUpgrade(server.port, AGENT_CONNECT_PATH, {
      protocol: AGENT_SUBPROTOCOL,
      headers: { Authorization: `Bearer ${device.agent_token}`, [AGENT_HEADERS.deviceId]: 'ping-flooder' },
    });
    expect(ws.status).toBe(101);
    await ws.waitForFrame((f) => f.opcode === OPCODE.text && JSON.parse(f.payload.toString()).type === 'welcome', 'the welcome');
    ws.socket.pause();
    const { sent, grown } = await floodServer(ws.socket);
    expect(grown, `the server grew ${(grown / MiB).toFixed(0)} MiB while ${(sent / MiB).toFixed(0)} MiB of pings were sent`).toBeLessThan(64 * MiB);
    await waitFor(async () => (await admin.get('/v1/devices/ping-flooder')).body.data.agent_status === 'offline', 'the flooder dropped');
    expect((await admin.get('/v1/devices/pinged')).body.data.agent_status).toBe('online');
    ws.socket.destroy();
  });
});
