/**
 * Session recordings (issue 16, CONTRACT 9) end to end, with real agents and shells: the cast
 * holds exactly what the client received, with resizes and a character split across frames;
 * it passes a strict asciicast v2 reader; the text export has no escapes; only the owner and
 * administrators read it, each read audited; a size cap truncates it and the session goes on; a
 * server killed mid-session leaves a readable cast; retention deletes the old and nothing else; the
 * store as a whole is bounded (a total cap, a floor of free space) and says what it did not record.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCastStrict } from '../helpers/asciicast';
import * as pty from 'node-pty';
import { runTether, startServerProcess, TETHER_BIN } from '../helpers/processes';
import { onPostgres } from '../helpers/store';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';
import { client } from '../helpers/http';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let ann: string; // a platform engineer who opens shells

beforeAll(async () => {
  stack = await startStack({ env: { TETHER_RECORD_INPUT: '1' } });
  ann = await stack.userToken('rec-ann', 'platform-engineer');
  await stack.onlineDevice('rec-dev');
});
afterAll(() => stack.stop());

async function shell(s: Stack, token: string, device: string) {
  const res = await s.as(token).post('/v1/remote-access/sessions', { device_id: device, protocol: 'shell' });
  expect(res.status, res.text).toBe(201);
  const c = connectStream(res.body.data.websocket_url);
  await c.opened;
  return { session: res.body.data as { session_id: string }, c };
}

/** Runs `command` in the shell and waits for `marker` in the output. */
async function run(c: StreamClient, command: string, marker: RegExp) {
  c.send(Buffer.from(`${command}\n`));
  await c.waitForOutput(marker);
}

async function closeAndRead(s: Stack, token: string, sessionId: string, c: StreamClient) {
  expect((await s.as(token).del(`/v1/remote-access/sessions/${sessionId}`)).status).toBe(200);
  await c.closed;
  // The recording is finished once the record says so.
  await waitFor(
    async () => (await s.as(token).get(`/v1/remote-access/sessions/${sessionId}`)).body.data.recording?.in_progress === false,
    'the recording to finish',
  );
  return s.as(token).get(`/v1/remote-access/sessions/${sessionId}/recording`);
}

describe('a recorded shell session', () => {
  it('holds exactly what the client received, resizes, and a character split across frames; and it reads back strictly', async () => {
    const { session, c } = await shell(stack, ann, 'rec-dev');
    c.send({ type: 'resize', cols: 100, rows: 30 });
    await run(c, 'stty size', /30 100/);
    // é is 0xc3 0xa9: its two bytes go in two frames, and the shell echoes it back
    c.send(Buffer.from('echo x'));
    c.send(Buffer.from([0xc3]));
    c.send(Buffer.from([0xa9]));
    c.send(Buffer.from('y-$((6*7))\n'));
    await c.waitForOutput(/xéy-42/);
    c.send({ type: 'resize', cols: 90, rows: 25 });
    await run(c, 'stty size; printf "\\033[1;31mred\\033[0m done-%s\\n" 7', /done-7/);

    const read = await closeAndRead(stack, ann, session.session_id, c);
    expect(read.status).toBe(200);
    expect(read.headers.get('content-type')).toBe('application/x-asciicast');
    const cast = parseCastStrict(read.text);
    expect(cast.header).toMatchObject({
      version: 2,
      width: 100,
      height: 30,
      tether: { session_id: session.session_id, device_id: 'rec-dev', user: 'rec-ann' },
    });
    expect(Math.abs((cast.header.timestamp as number) - Date.now() / 1000)).toBeLessThan(120);
    const output = cast.events
      .filter((e) => e[1] === 'o')
      .map((e) => e[2])
      .join('');
    expect(output).toBe(c.received().toString('utf8')); // byte for byte what the client saw
    expect(output).toContain('xéy-42');
    expect(cast.events.filter((e) => e[1] === 'r').map((e) => e[2])).toEqual(['100x30', '90x25']);
    const input = cast.events
      .filter((e) => e[1] === 'i')
      .map((e) => e[2])
      .join('');
    expect(input).toContain('echo xéy-$((6*7))\n'); // TETHER_RECORD_INPUT=1 on this server

    const record = (await stack.as(ann).get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.recording;
    expect(record).toMatchObject({ bytes: Buffer.byteLength(read.text), truncated: false, input: true, in_progress: false });
    const { createHash } = await import('node:crypto');
    expect(record.sha256).toBe(createHash('sha256').update(read.text).digest('hex'));
    expect(record.duration_s).toBeGreaterThan(0);
    expect(record.duration_s).toBeCloseTo(cast.events.at(-1)![0], 3);
  });

  it('exports the output as text without escape sequences, for grep', async () => {
    const { session, c } = await shell(stack, ann, 'rec-dev');
    await run(c, 'printf "\\033[32mgreen\\033[0m and \\033]0;title\\007plain-%s\\n" 9', /plain-9/);
    await closeAndRead(stack, ann, session.session_id, c);
    const text = await stack.as(ann).get(`/v1/remote-access/sessions/${session.session_id}/recording?format=text`);
    expect(text.status).toBe(200);
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(text.text).toContain('green and plain-9');
    expect(text.text).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/); // no ESC, no CR: nothing but text, tabs and newlines
    expect((await stack.as(ann).get(`/v1/remote-access/sessions/${session.session_id}/recording?format=mp4`)).status).toBe(400);
  });

  it('may be read by its owner and administrators only, each read audited; a developer gets 404', async () => {
    const { session, c } = await shell(stack, ann, 'rec-dev');
    await run(c, 'echo secret-$((1+1))', /secret-2/);
    await closeAndRead(stack, ann, session.session_id, c);
    const dev = await stack.userToken('rec-dev-user', 'developer');
    const other = await stack.userToken('rec-bob', 'platform-engineer');
    expect((await stack.as(dev).get(`/v1/remote-access/sessions/${session.session_id}/recording`)).status).toBe(404);
    expect((await stack.as(other).get(`/v1/remote-access/sessions/${session.session_id}/recording`)).status).toBe(404);
    expect((await stack.admin.get(`/v1/remote-access/sessions/${session.session_id}/recording?format=text`)).text).toContain('secret-2');
    const audit = (await stack.admin.get(`/v1/audit/remote-access?session_id=${session.session_id}&event=recording.viewed`)).body.data;
    expect(audit.map((e: { actor: string; reason: string }) => [e.actor, e.reason])).toEqual([
      ['admin', 'text'],
      ['rec-ann', 'cast'], // closeAndRead
    ]);
    // sessions with and without recordings, filtered
    const withRec = (await stack.admin.get('/v1/remote-access/sessions?has_recording=true&per_page=200')).body.data as Array<{
      session_id: string;
      recording: unknown;
    }>;
    expect(withRec.map((s) => s.session_id)).toContain(session.session_id);
    expect(withRec.every((s) => s.recording !== null)).toBe(true);
    const diag = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'rec-dev', protocol: 'diagnostics' })).body.data;
    expect(diag.recording).toBeNull();
    const without = (await stack.admin.get('/v1/remote-access/sessions?has_recording=false&per_page=200')).body.data as Array<{ session_id: string }>;
    expect(without.map((s) => s.session_id)).toContain(diag.session_id);
    expect(without.map((s) => s.session_id)).not.toContain(session.session_id);
    expect((await stack.admin.get(`/v1/remote-access/sessions/${diag.session_id}/recording`)).status).toBe(404);
    await stack.admin.del(`/v1/remote-access/sessions/${diag.session_id}`);
  });

  it('keeps recording across the streams of one session, marking where each starts', async () => {
    const res = await stack.as(ann).post('/v1/remote-access/sessions', { device_id: 'rec-dev', protocol: 'shell' });
    const url = res.body.data.websocket_url;
    const first = connectStream(url);
    await first.opened;
    await run(first, 'echo one-$((0+1))', /one-1/);
    first.ws.close();
    await first.closed;
    const second = connectStream(url);
    await second.opened;
    await run(second, 'echo two-$((1+1))', /two-2/);
    const read = await closeAndRead(stack, ann, res.body.data.session_id, second);
    const cast = parseCastStrict(read.text);
    const output = cast.events
      .filter((e) => e[1] === 'o')
      .map((e) => e[2])
      .join('');
    expect(output).toBe(first.received().toString('utf8') + second.received().toString('utf8'));
    expect(cast.events.filter((e) => e[1] === 'm').map((e) => e[2])).toEqual(['stream 2']);
  });
});

describe('tether session play', () => {
  it('saves a recording with --cast, replays it without a terminal, lists it, and refuses what you may not see', async () => {
    const { session, c } = await shell(stack, ann, 'rec-dev');
    await run(c, 'sleep 1; echo played-$((5*5))', /played-25/);
    const api = await closeAndRead(stack, ann, session.session_id, c);
    const env = { TETHER_SERVER: stack.url, TETHER_TOKEN: ann, XDG_CONFIG_HOME: tempDir('tether-rec-config-') };
    const file = join(tempDir('tether-rec-cast-'), 'saved.cast');
    const saved = await runTether(['session', 'play', session.session_id, '--cast', file], env);
    expect(saved).toMatchObject({ code: 0, stderr: expect.stringContaining(`saved the recording of ${session.session_id} to ${file}`) });
    expect(readFileSync(file, 'utf8')).toBe(api.text);

    // The one-second pause is cut to 0.1 s, and then played 10 times faster.
    const t0 = Date.now();
    const played = await runTether(['session', 'play', session.session_id, '--idle-limit', '0.1', '--speed', '10'], env);
    expect(played.code).toBe(0);
    expect(played.stdout).toContain('played-25');
    expect(played.stderr).toContain('end of the recording');
    expect(Date.now() - t0).toBeLessThan(10_000);

    const listed = await runTether(['session', 'list', '--recorded'], env);
    expect(listed.stdout.split('\n')[0]).toMatch(/ RECORDING$/);
    expect(listed.stdout).toMatch(new RegExp(`^${session.session_id} .* \\d+s$`, 'm'));

    const bob = await stack.userToken('rec-play-bob', 'platform-engineer');
    const refused = await runTether(['session', 'play', session.session_id], { ...env, TETHER_TOKEN: bob });
    expect(refused).toMatchObject({ code: 1, stderr: expect.stringContaining(`no session ${session.session_id}`) });
  });
});

describe('tether session play on a terminal', () => {
  it('stops at q, before what comes after a pause', async () => {
    const { session, c } = await shell(stack, ann, 'rec-dev');
    await run(c, 'echo first-$((1)); sleep 3; echo second-$((2))', /second-2/);
    await closeAndRead(stack, ann, session.session_id, c);
    const term = pty.spawn(process.execPath, [TETHER_BIN, 'session', 'play', session.session_id], {
      env: { ...process.env, TETHER_SERVER: stack.url, TETHER_TOKEN: ann, XDG_CONFIG_HOME: tempDir('tether-rec-config-') } as Record<string, string>,
    });
    let screen = '';
    term.onData((d) => (screen += d));
    const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    try {
      await waitFor(() => screen.includes('first-1'), 'the first line');
      term.write('q');
      expect(await exited).toBe(0);
      expect(screen).toContain('tether: stopped');
      expect(screen).not.toContain('second-2');
    } finally {
      term.kill('SIGKILL');
    }
  });
});

describe('limits and settings', () => {
  it('truncates a recording at its size cap, and the session goes on', async () => {
    const small = await startStack({ env: { TETHER_RECORDING_MAX_BYTES: String(64 * 1024) } });
    try {
      const token = await small.userToken('cap-ann', 'platform-engineer');
      await small.onlineDevice('cap-dev');
      const { session, c } = await shell(small, token, 'cap-dev');
      // Random bytes do not compress: far past 64 KiB of file.
      await run(c, 'head -c 600000 /dev/urandom | base64 -w 0; echo; echo big-$((2*3))', /big-6/);
      await waitFor(
        async () => (await small.as(token).get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.recording?.truncated,
        'the recording to be truncated',
      );
      await run(c, 'echo still-$((4+4))', /still-8/); // the session goes on
      const read = await closeAndRead(small, token, session.session_id, c);
      const record = (await small.as(token).get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.recording;
      expect(record).toMatchObject({ truncated: true });
      expect(record.stored_bytes).toBeLessThanOrEqual(64 * 1024);
      expect(parseCastStrict(read.text).events.length).toBeGreaterThan(0); // what was kept reads back
      expect(small.logs.some((l) => l.includes('recording truncated'))).toBe(true);
    } finally {
      await small.stop();
    }
  });

  it('stops at the total cap: the recording that reaches it is truncated, later ones are kept empty saying why; one warning, each counted; the server goes on', async () => {
    const cap = 128 * 1024;
    const full = await startStack({ env: { TETHER_RECORDINGS_MAX_TOTAL_BYTES: String(cap) } });
    try {
      const token = await full.userToken('total-ann', 'platform-engineer');
      await full.onlineDevice('total-dev');
      const first = await shell(full, token, 'total-dev');
      // Random bytes do not compress: far past the cap of every recording together.
      await run(first.c, 'head -c 300000 /dev/urandom | base64 -w 0; echo; echo big-$((2*3))', /big-6/);
      const firstRead = await closeAndRead(full, token, first.session.session_id, first.c);
      const firstRecord = (await full.as(token).get(`/v1/remote-access/sessions/${first.session.session_id}`)).body.data.recording;
      expect(firstRecord).toMatchObject({ truncated: true });
      expect(firstRecord.stored_bytes).toBeLessThanOrEqual(cap);
      expect(parseCastStrict(firstRead.text).events.length).toBeGreaterThan(0); // what was kept reads back

      for (const i of [1, 2]) {
        const { session, c } = await shell(full, token, 'total-dev');
        await run(c, `echo unrecorded-${i}-$((1+1))`, new RegExp(`unrecorded-${i}-2`)); // the session goes on
        const read = await closeAndRead(full, token, session.session_id, c);
        expect(read.status).toBe(200);
        const cast = parseCastStrict(read.text);
        expect(cast.header).toMatchObject({ tether: { session_id: session.session_id } });
        expect(cast.events).toEqual([[expect.any(Number), 'm', expect.stringMatching(/^not recorded: .*TETHER_RECORDINGS_MAX_TOTAL_BYTES/)]]);
        expect(read.text).not.toContain('unrecorded-');
        const record = (await full.as(token).get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.recording;
        expect(record).toMatchObject({ truncated: true, in_progress: false, bytes: Buffer.byteLength(read.text) });
      }
      expect(full.logs.filter((l) => l.includes('"level":"warn"') && l.includes('the recordings store is full'))).toHaveLength(1);
      const metrics = (await full.admin.get('/metrics')).text;
      expect(metrics).toMatch(/^tether_recordings_refused_total\{reason="total_cap"\} 3$/m);
      expect(Number(/^tether_recordings_stored_bytes (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(cap / 2);
      expect((await full.admin.get('/readyz')).status).toBe(200);
      expect((await full.admin.get('/v1/remote-access/sessions?has_recording=true')).status).toBe(200);
    } finally {
      await full.stop();
    }
  });

  it('refuses new recordings while the data dir has less free space than TETHER_RECORDINGS_MIN_FREE_BYTES, and the session goes on', async () => {
    const low = await startStack({ env: { TETHER_RECORDINGS_MIN_FREE_BYTES: String(2 ** 50) } }); // 1 PiB: more than any disk here
    try {
      await low.onlineDevice('low-dev');
      const { session, c } = await shell(low, low.adminToken, 'low-dev');
      await run(c, 'echo served-$((3+3))', /served-6/);
      const read = await closeAndRead(low, low.adminToken, session.session_id, c);
      expect(parseCastStrict(read.text).events).toEqual([
        [expect.any(Number), 'm', expect.stringMatching(/^not recorded: .*TETHER_RECORDINGS_MIN_FREE_BYTES/)],
      ]);
      expect((await low.admin.get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.recording).toMatchObject({ truncated: true });
      expect((await low.admin.get('/metrics')).text).toMatch(/^tether_recordings_refused_total\{reason="free_space"\} 1$/m);
    } finally {
      await low.stop();
    }
  });

  it('records nothing with TETHER_RECORD_SHELL=0', async () => {
    const off = await startStack({ env: { TETHER_RECORD_SHELL: '0' } });
    try {
      await off.onlineDevice('off-dev');
      const { session, c } = await shell(off, off.adminToken, 'off-dev');
      await run(c, 'echo unrecorded-$((2+2))', /unrecorded-4/);
      await off.admin.del(`/v1/remote-access/sessions/${session.session_id}`);
      await c.closed;
      expect((await off.admin.get(`/v1/remote-access/sessions/${session.session_id}`)).body.data.recording).toBeNull();
      expect((await off.admin.get(`/v1/remote-access/sessions/${session.session_id}/recording`)).status).toBe(404);
      expect(existsSync(join(off.dataDir, 'recordings'))).toBe(false);
    } finally {
      await off.stop();
    }
  });

  it('retention deletes recordings older than the setting, file and row, and nothing else', async () => {
    const dataDir = tempDir();
    let offset = 0;
    const first = await startStack({ dataDir, now: () => Date.now() + offset, env: { TETHER_RECORDING_RETENTION_DAYS: '2' } });
    const ids: string[] = [];
    try {
      await first.onlineDevice('ret-dev');
      for (let i = 0; i < 2; i++) {
        if (i === 1) offset += 3 * 24 * 3600 * 1000; // the second recording is three days younger
        const { session, c } = await shell(first, first.adminToken, 'ret-dev');
        await run(c, `echo kept-${i}-$((1))`, new RegExp(`kept-${i}-1`));
        await closeAndRead(first, first.adminToken, session.session_id, c);
        ids.push(session.session_id);
      }
    } finally {
      await first.stop();
    }
    // On SQLite a recording is a file in the data dir; on PostgreSQL it moved into the database.
    const files = () => (existsSync(join(dataDir, 'recordings')) ? readdirSync(join(dataDir, 'recordings')) : []);
    expect(files().sort()).toEqual(onPostgres ? [] : ids.map((id) => `${id}.cast.gz`).sort());
    // A start two and a half days after the second recording: the first is five and a half days old.
    offset += 2.5 * 24 * 3600 * 1000;
    const again = await startStack({ dataDir, now: () => Date.now() + offset, env: { TETHER_RECORDING_RETENTION_DAYS: '5' } });
    try {
      await waitFor(() => !existsSync(join(dataDir, 'recordings', `${ids[0]}.cast.gz`)), 'the old file to go');
      await waitFor(async () => (await again.admin.get(`/v1/remote-access/sessions/${ids[0]}`)).body.data.recording === null, 'the old row to go');
      expect((await again.admin.get(`/v1/remote-access/sessions/${ids[0]}/recording`)).status).toBe(404);
      const kept = await again.admin.get(`/v1/remote-access/sessions/${ids[1]}/recording?format=text`);
      expect(kept.text).toContain('kept-1-1');
      expect(files()).toEqual(onPostgres ? [] : [`${ids[1]}.cast.gz`]);
    } finally {
      await again.stop();
    }
  });
});

describe('a server killed mid-session', () => {
  it('leaves a readable recording up to its last batch, repaired at the next start', async () => {
    const dataDir = tempDir();
    const server = await startServerProcess(dataDir);
    const admin = client(server.url, (await import('node:fs')).readFileSync(join(dataDir, 'admin.token'), 'utf8').trim());
    const device = await admin.post('/v1/devices', { device_id: 'kill-dev' });
    const { startProcess } = await import('../helpers/processes');
    const agent = startProcess(['agent', '--server', server.url, '--device-id', 'kill-dev'], { TETHER_DEVICE_TOKEN: device.body.data.agent_token });
    try {
      await waitFor(async () => (await admin.get('/v1/devices/kill-dev')).body.data.agent_status === 'online', 'the agent');
      const s = (await admin.post('/v1/remote-access/sessions', { device_id: 'kill-dev', protocol: 'shell' })).body.data;
      const c = connectStream(s.websocket_url);
      await c.opened;
      await run(c, 'echo before-the-kill-$((3*3))', /before-the-kill-9/);
      const file = join(dataDir, 'recordings', `${s.session_id}.cast.gz`);
      // a batch holding the marker is on disk (batches go every 250 ms)
      await waitFor(
        async () => (await admin.get(`/v1/remote-access/sessions/${s.session_id}/recording?format=text`)).text.includes('before-the-kill-9'),
        'the batch to be written',
      );
      server.proc.kill('SIGKILL');
      await server.proc.exited;
      expect(existsSync(file)).toBe(true);

      const restarted = await startServerProcess(dataDir, {}, server.port);
      try {
        const read = await waitFor(async () => {
          const r = await admin.get(`/v1/remote-access/sessions/${s.session_id}`);
          return r.body.data?.recording?.bytes > 0 && r.body.data.recording;
        }, 'the recording to be repaired');
        expect(read.in_progress).toBe(false);
        const cast = await admin.get(`/v1/remote-access/sessions/${s.session_id}/recording`);
        const parsed = parseCastStrict(cast.text);
        expect(
          parsed.events
            .filter((e) => e[1] === 'o')
            .map((e) => e[2])
            .join(''),
        ).toContain('before-the-kill-9');
        const { createHash } = await import('node:crypto');
        expect(read.sha256).toBe(createHash('sha256').update(cast.text).digest('hex'));
        expect(read.bytes).toBe(Buffer.byteLength(cast.text));
      } finally {
        await restarted.proc.stop();
      }
    } finally {
      await agent.stop();
    }
  });
});
