/**
 * Abuse at the edge: clients too slow to send their headers, oversized WebSocket frames on each
 * endpoint, upgrades to paths that are not endpoints, and a stream client that never reads while
 * the device pushes a large download (the server's memory must stay bounded).
 */
import { writeFileSync, readFileSync, truncateSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_CONNECT_PATH } from '../../shared/protocol/control-channel';
import { AGENT_SUBPROTOCOL } from '../../shared/version';
import { client } from '../helpers/http';
import { startProcess, startServerProcess } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const MiB = 1024 * 1024;
let stack: Stack;
beforeAll(async () => {
  // Far apart, so each test can tell which timeout cut its client off.
  stack = await startStack({ env: { TETHER_HEADERS_TIMEOUT_MS: '600', TETHER_REQUEST_TIMEOUT_MS: '4000' } });
});
afterAll(() => stack.stop());

/** Sends `head` and then one more byte every 100 ms; resolves with what the server answered. */
function slowClient(head: string, trickle: string): Promise<{ answer: string; afterMs: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(stack.port, '127.0.0.1');
    let answer = '';
    let sent = 0;
    const timer = setInterval(() => socket.write(trickle[sent++ % trickle.length]!), 100);
    socket.on('connect', () => socket.write(head));
    socket.on('data', (c) => (answer += c.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ answer, afterMs: performance.now() - started });
    });
  });
}

describe('slow clients', () => {
  it('headers trickled byte by byte are cut off at the headers timeout with a 408', async () => {
    const { answer, afterMs } = await slowClient('GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ', 'abcdefgh');
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(answer).toMatch(/\r\nX-Request-ID: [0-9a-f-]{36}\r\n/);
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toEqual({ error: 'request_timeout', message: 'the request was not received in time', status: 408 });
    expect(afterMs).toBeLessThan(2500); // the headers timeout (0.6 s, checked every 0.6 s), not the request timeout (4 s)
  });

  it('a body trickled byte by byte is cut off at the request timeout', async () => {
    const body = '{"device_id":"x"}'.padEnd(1000, ' ');
    const head = `POST /v1/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${stack.adminToken}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { answer, afterMs } = await slowClient(head, body);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(afterMs).toBeGreaterThan(3500); // headers were complete: the request timeout (4 s) applies
    expect(afterMs).toBeLessThan(8000);
  });

  it('a malformed request line gets a 400 in the contract shape', async () => {
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(stack.port, '127.0.0.1', () => socket.write('GARBAGE\r\n\r\n'));
      let text = '';
      socket.on('data', (c) => (text += c.toString()));
      socket.on('close', () => resolve(text));
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(answer.split('\r\n\r\n')[1]!)).toMatchObject({ error: 'bad_request', status: 400 });
  });
});

describe('WebSocket limits', () => {
  /** Connects, sends one frame of `size` bytes, and resolves with the close code. */
  async function oversized(ws: WebSocket, size: number): Promise<number> {
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    ws.on('error', () => {});
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', () => reject(new Error('upgrade refused')));
    });
    ws.send(Buffer.alloc(size, 1), { binary: true });
    return closed;
  }

  it('the agent control channel closes 1009 on a frame over 64 KiB', async () => {
    const token = await stack.addDevice('abuse-ctl');
    const ws = new WebSocket(`${stack.url.replace('http', 'ws')}${AGENT_CONNECT_PATH}`, AGENT_SUBPROTOCOL, {
      headers: { authorization: `Bearer ${token}`, 'x-tether-device-id': 'abuse-ctl' },
    });
    expect(await oversized(ws, 64 * 1024 + 1)).toBe(1009);
    await stack.waitForStatus('abuse-ctl', 'offline', 2000);
  });

  it('a session stream closes 1009 on a frame over 4 MiB; the session stays usable', async () => {
    await stack.onlineDevice('abuse-stream');
    const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'abuse-stream', protocol: 'diagnostics' })).body.data;
    expect(await oversized(new WebSocket(s.websocket_url), 4 * MiB + 1)).toBe(1009);
    const again = connectStream(s.websocket_url);
    await again.opened;
    expect((await again.request('system.info')).ok).toBe(true);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('upgrades to anything but the three WebSocket endpoints are refused', async () => {
    const paths = [
      '/v1/me',
      '/v1/agent/connectx',
      '/v1/remote-access/sessions/x/streamy',
      '/nothing',
      '/v1/remote-access/sessions/%zz/stream',
      '/v1/remote-access/sessions/%ED%A0%80/stream',
    ];
    for (const path of paths) {
      const ws = new WebSocket(`${stack.url.replace('http', 'ws')}${path}`, { headers: { authorization: `Bearer ${stack.adminToken}` } });
      ws.on('error', () => {});
      const status = await new Promise<number>((resolve) => {
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => resolve(101));
        ws.once('close', () => resolve(-1));
      });
      expect(status, path).toBe(404);
    }
    expect((await stack.admin.get('/v1/me')).status).toBe(200); // still serving
  });
});

describe('a stream client that never reads', () => {
  it("holds the server's memory flat while the device has 2 GiB to send", async () => {
    const dataDir = tempDir();
    const server = await startServerProcess(dataDir);
    const admin = client(server.url, readFileSync(join(dataDir, 'admin.token'), 'utf8').trim());
    const root = tempDir('tether-abuse-root-');
    writeFileSync(join(root, 'big.bin'), '');
    truncateSync(join(root, 'big.bin'), 2048 * MiB);
    const device = (await admin.post('/v1/devices', { device_id: 'no-reader' })).body.data;
    const agent = startProcess(['agent', '--server', server.url, '--device-id', 'no-reader'], {
      TETHER_DEVICE_TOKEN: device.agent_token,
      TETHER_FILES_ROOT: root,
    });
    try {
      await waitFor(async () => (await admin.get('/v1/devices/no-reader')).body.data.agent_status === 'online', 'online');
      const rss = () => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${server.proc.pid}/status`, 'utf8'))![1]) * 1024;
      const s = (await admin.post('/v1/remote-access/sessions', { device_id: 'no-reader', protocol: 'file-transfer' })).body.data;
      const stream = connectStream(s.websocket_url);
      await stream.opened;
      const before = rss();
      const id = 7;
      stream.ws.send(JSON.stringify({ id, op: 'download', params: { path: 'big.bin' } }));
      await stream.waitForMessage((m) => m.id === id && m.ok === true);
      stream.ws.pause(); // and never read again
      // Wait until the bytes stop moving: everything in flight sits in bounded buffers.
      let last = -1;
      await waitFor(
        async () => {
          const moved = (await admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.bytes_from_device as number;
          const settled = moved === last && moved > 0;
          last = moved;
          return settled;
        },
        'the transfer to stall',
        20_000,
        1500,
      );
      expect(last).toBeLessThan(256 * MiB); // stalled far short of 2 GiB
      expect(rss() - before).toBeLessThan(64 * MiB);
      stream.ws.terminate();
      await admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    } finally {
      await agent.stop();
      await server.proc.stop();
    }
  });
});
