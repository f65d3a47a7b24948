/**
 * Faults, with real processes: an agent killed (SIGKILL) in the middle of an upload and of a
 * download, a server killed during an upload, open sessions and a burst of writes, and 500 agents
 * reconnecting at once after a server restart.
 */
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as tar from 'tar-stream';
import { afterAll, describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startProcess, startServerProcess } from '../helpers/processes';
import { startStack, tempDir } from '../helpers/stack';
import { onPostgres } from '../helpers/store';
import { connectStream, type StreamClient } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const MiB = 1024 * 1024;
const SWARM = resolve(__dirname, '../../dist/bench-swarm.cjs');

/** Every path under `dir`, relative. */
const listing = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();
const partFiles = (dir: string) => listing(dir).filter((p) => p.endsWith('.part'));

/** Starts an upload of one big file and sends the first `sendBytes` of its archive. */
async function startUpload(stream: StreamClient, path: string, name: string, size: number, sendBytes: number) {
  const ready = await stream.request('upload', { path });
  expect(ready).toMatchObject({ ok: true, result: { ready: true } });
  const pack = tar.pack();
  const entry = pack.entry({ name, size, type: 'file', mode: 0o644 });
  let queued = 0;
  pack.on('data', (chunk) => stream.send(chunk as Buffer));
  const block = randomBytes(MiB);
  while (queued < sendBytes) {
    entry.write(block);
    queued += block.length;
  }
  return { entry, pack };
}

describe('an agent killed in the middle of a transfer', () => {
  it('upload: the client gets 1011, nothing partial stays once the agent is back, the record adds up', async () => {
    const stack = await startStack();
    try {
      const root = tempDir('tether-fault-root-');
      const { token, agent } = await stack.onlineDevice('kill-up', { TETHER_FILES_ROOT: root });
      const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'kill-up', protocol: 'file-transfer' })).body.data;
      const stream = connectStream(s.websocket_url);
      await stream.opened;
      await startUpload(stream, 'incoming/deep', 'big.bin', 256 * MiB, 16 * MiB);
      await waitFor(() => existsSync(join(root, 'incoming')) && partFiles(root).some((p) => statSync(join(root, p)).size > 0), 'the device writing');
      agent.kill('SIGKILL');
      expect(await stream.closed).toEqual({ code: 1011, reason: 'device connection lost' });
      expect(partFiles(root)).not.toEqual([]); // what a killed process leaves behind...

      // The session outlives its stream, and its counters are what the relay forwarded.
      const open = (await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
      expect(open.status).toBe('open');
      expect(open.bytes_to_device).toBeGreaterThan(0);
      expect(open.bytes_to_device).toBeLessThanOrEqual(stream.sentBytes);
      const closed = (await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
      expect(closed).toMatchObject({ status: 'closed', close_reason: 'closed', bytes_to_device: open.bytes_to_device });

      // ...is removed when the agent starts again, directories it created included.
      const again = stack.startAgent('kill-up', token, { TETHER_FILES_ROOT: root });
      await stack.waitForStatus('kill-up', 'online');
      await again.waitForLine(/removed what interrupted uploads left behind.*"temp_files":1,"directories":2/);
      expect(listing(root)).toEqual([]);
    } finally {
      await stack.stop();
    }
  });

  it('download with tether cp: exit 1 with the reason, no partial file on either side', async () => {
    const stack = await startStack();
    try {
      const root = tempDir('tether-fault-root-');
      writeFileSync(join(root, 'huge.bin'), '');
      truncateSync(join(root, 'huge.bin'), 4096 * MiB); // sparse: costs no disk
      const { token, agent } = await stack.onlineDevice('kill-down', { TETHER_FILES_ROOT: root });
      const local = tempDir('tether-fault-local-');
      const cp = startProcess(['cp', '--no-progress', 'kill-down:/huge.bin', local], { TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken });
      await waitFor(() => partFiles(local).some((p) => statSync(join(local, p)).size > 8 * MiB), 'the download under way');
      agent.kill('SIGKILL');
      expect((await cp.exited).code).toBe(1);
      // Killed between two frames, the relay says why (1011); killed inside one (the relay
      // forwards frames as they arrive), the client's connection is cut and the CLI says so.
      expect(cp.stderr.join('\n')).toMatch(/device connection lost|the device behind it, went away in the middle of a message/);
      expect(listing(local)).toEqual([]);
      expect(listing(root)).toEqual(['huge.bin']);
      // the CLI closed its session on the way out, with exact counters
      const [session] = (await stack.admin.get('/v1/remote-access/sessions?device_id=kill-down')).body.data;
      expect(session).toMatchObject({ status: 'closed', close_reason: 'closed' });
      expect(session.bytes_from_device).toBeGreaterThan(8 * MiB);
      stack.startAgent('kill-down', token, { TETHER_FILES_ROOT: root });
      await stack.waitForStatus('kill-down', 'online');
    } finally {
      await stack.stop();
    }
  });
});

describe('a server killed with SIGKILL', () => {
  it('comes back with an intact database, every acknowledged write, reconciled sessions and its agents', async () => {
    const dataDir = tempDir();
    const first = await startServerProcess(dataDir);
    const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    let admin = client(first.url, adminToken);
    const root = tempDir('tether-fault-root-');
    const device = (await admin.post('/v1/devices', { device_id: 'srv-kill' })).body.data;
    const agent = startProcess(['agent', '--server', first.url, '--device-id', 'srv-kill'], {
      TETHER_DEVICE_TOKEN: device.agent_token,
      TETHER_FILES_ROOT: root,
    });
    await waitFor(async () => (await admin.get('/v1/devices/srv-kill')).body.data.agent_status === 'online', 'online');
    const shell = (await admin.post('/v1/remote-access/sessions', { device_id: 'srv-kill', protocol: 'shell' })).body.data;
    const transfer = (await admin.post('/v1/remote-access/sessions', { device_id: 'srv-kill', protocol: 'file-transfer' })).body.data;
    const shellStream = connectStream(shell.websocket_url);
    await shellStream.opened;
    const upStream = connectStream(transfer.websocket_url);
    await upStream.opened;
    await startUpload(upStream, 'up', 'big.bin', 256 * MiB, 16 * MiB);
    await waitFor(() => existsSync(join(root, 'up')) && partFiles(root).length > 0, 'the device writing');

    // A burst of writes; the server dies right after the last answer.
    const acknowledged: string[] = [];
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        const r = await admin.post('/v1/devices', { device_id: `burst-${i}` });
        if (r.status === 201) acknowledged.push(`burst-${i}`);
      }),
    );
    expect(acknowledged).toHaveLength(40);
    first.proc.kill('SIGKILL');
    await first.proc.exited;
    expect((await shellStream.closed).code).toBe(1006); // no close frame from a killed server
    await upStream.closed;
    // the agent dropped the upload with its stream: nothing partial on the device
    await waitFor(() => partFiles(root).length === 0, 'the partial upload removed');
    await agent.waitForLine(/disconnected from broker; reconnecting/);

    // SQLite's file survived the kill whole (PostgreSQL recovers its own on every start).
    if (!onPostgres) {
      const db = new Database(join(dataDir, 'tether.db'), { readonly: true });
      try {
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        db.close();
      }
    }

    const second = await startServerProcess(dataDir, {}, first.port);
    try {
      admin = client(second.url, adminToken);
      for (const id of acknowledged) expect((await admin.get(`/v1/devices/${id}`)).status, id).toBe(200);
      for (const s of [shell, transfer]) {
        expect((await admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data).toMatchObject({ status: 'closed', close_reason: 'server_shutdown' });
        const events = (await admin.get(`/v1/audit/remote-access?session_id=${s.session_id}`)).body.data.map((e: { event: string }) => e.event);
        expect(events.sort()).toEqual(['session.closed', 'session.opened']);
      }
      // the agent reconnects on its own, and the device serves again
      await waitFor(async () => (await admin.get('/v1/devices/srv-kill')).body.data.agent_status === 'online', 'reconnect', 35_000);
      expect((await admin.post('/v1/remote-access/sessions', { device_id: 'srv-kill', protocol: 'shell' })).status).toBe(201);
      expect(listing(root)).toEqual([]);
    } finally {
      await agent.stop();
      await second.proc.stop();
    }
  });
});

describe('500 agents and a server restart', () => {
  const swarms: Array<ReturnType<typeof spawn>> = [];
  afterAll(() => {
    for (const s of swarms) s.kill('SIGKILL');
  });

  it('reconnect on their own, spread out by backoff with jitter', async () => {
    const count = 500;
    const dataDir = tempDir();
    const first = await startServerProcess(dataDir);
    const adminToken = readFileSync(join(dataDir, 'admin.token'), 'utf8').trim();
    const admin = client(first.url, adminToken);
    const devices: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < count; i += 25) {
      await Promise.all(
        Array.from({ length: 25 }, async (_, j) => {
          const id = `swarm-${i + j}`;
          const r = await admin.post('/v1/devices', { device_id: id });
          devices.push({ id, token: r.body.data.agent_token });
        }),
      );
    }
    const file = join(tempDir(), 'devices.json');
    writeFileSync(file, JSON.stringify(devices));
    const swarm = spawn(process.execPath, [SWARM, 'real-agents', first.url, file, tempDir()], { stdio: ['ignore', 'pipe', 'inherit'] });
    swarms.push(swarm);
    const events: any[] = [];
    let partial = '';
    swarm.stdout!.on('data', (c: Buffer) => {
      const parts = (partial + c.toString()).split('\n');
      partial = parts.pop()!;
      for (const p of parts) if (p) events.push(JSON.parse(p));
    });
    await waitFor(() => events.some((e) => e.event === 'all-connected'), 'all agents connected', 30_000);
    expect((await client(first.url).get('/metrics')).text).toContain(`tether_agents_online ${count}\n`);

    first.proc.kill('SIGKILL');
    await first.proc.exited;
    const second = await startServerProcess(dataDir, {}, first.port);
    const restartedAt = Date.now();
    try {
      await waitFor(() => events.filter((e) => e.event === 'reconnected').length >= count, 'every agent back', 60_000);
      const times = events
        .filter((e) => e.event === 'reconnected')
        .map((e) => e.at - restartedAt)
        .sort((a, b) => a - b);
      const at = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))]!;
      // The busiest quarter second holds a small share of the agents, not all of them at once.
      let busiest = 0;
      for (let i = 0, j = 0; i < times.length; i++) {
        while (times[i]! - times[j]! > 250) j++;
        busiest = Math.max(busiest, i - j + 1);
      }
      console.info(
        `500 agents reconnected after the restart: first ${times[0]} ms, p10 ${at(0.1)} ms, p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, last ${times.at(-1)} ms; busiest 250 ms: ${busiest} agents`,
      );
      expect(new Set(events.filter((e) => e.event === 'reconnected').map((e) => e.device)).size).toBe(count);
      // Without jitter they would all come within a few tens of milliseconds of each other.
      expect(at(0.9) - at(0.1)).toBeGreaterThan(500);
      expect(busiest).toBeLessThan(count * 0.8);
      const after = client(second.url, adminToken);
      await waitFor(async () => (await after.get('/v1/devices/swarm-0')).body.data.agent_status === 'online', 'presence');
    } finally {
      swarm.kill('SIGTERM');
      await new Promise((r) => swarm.once('exit', r));
      await second.proc.stop();
    }
  });
});
