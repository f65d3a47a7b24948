/**
 * Sessions that warn before their TTL ends, and extending them (docs/session-streams.md, notices;
 * docs/http-api.md, sessions): a real server (its clock shiftable), real agents and PTYs, and the
 * CLI in a real terminal. TETHER_SESSION_WARNINGS=118,116,58,56 makes a 60 s session warn 2 and 4 s
 * after it opens (its 118 and 116 s warnings are behind it already), and again 2 and 4 s after it is
 * extended to 120 s. The cluster and peers: ./session-ttl-cluster.test.ts.
 */
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listenEvents, type EventsListener } from '../helpers/events';
import { runTether, TETHER_BIN, type Proc } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const WARNINGS = '118,116,58,56';
let stack: Stack;
let agentB: Proc;
let offset = 0; // the server's clock runs `offset` ms ahead of the real one
let events: EventsListener;
let configHome: string;

beforeAll(async () => {
  stack = await startStack({ now: () => Date.now() + offset, env: { TETHER_SESSION_WARNINGS: WARNINGS } });
  await stack.onlineDevice('ttl-a');
  ({ agent: agentB } = await stack.onlineDevice('ttl-b'));
  await stack.onlineDevice('ttl-cli');
  events = await listenEvents(stack.url, { authorization: `Bearer ${stack.adminToken}` });
  configHome = tempDir('tether-ttl-config-');
}, 60_000);
afterAll(async () => {
  events?.close();
  await stack?.stop();
});

type Session = { session_id: string; websocket_url?: string; expires_at: string; opened_at: string; ttl_seconds: number; status: string };

async function open(deviceId: string, protocol: string, ttl = 60, token = stack.adminToken): Promise<Session> {
  const res = await stack.as(token).post('/v1/remote-access/sessions', { device_id: deviceId, protocol, ttl_seconds: ttl });
  expect(res.status, res.text).toBe(201);
  return res.body.data;
}

const extend = (id: string, ttl: number, token = stack.adminToken, headers: Record<string, string> = {}) =>
  stack.as(token).post(`/v1/remote-access/sessions/${id}/extend`, { ttl_seconds: ttl }, headers);

/** The notice with `secondsLeft` once the client has it, and when it was seen. */
async function notice(client: StreamClient, secondsLeft: number, timeoutMs = 15_000) {
  const frame = await client.waitForMessage((m) => m.type === 'notice' && m.seconds_left === secondsLeft, timeoutMs);
  return { frame, seenAt: Date.now() };
}

const noticeText = (s: Session, left: number, expiresAt = s.expires_at) =>
  `tether: this session expires in ${left} seconds (at ${expiresAt.slice(11, 19)} UTC); extend it with: tether session extend ${s.session_id} --ttl SECONDS`;

describe('warnings before the end', () => {
  it('warns a shell stream 58 and 56 s before its end, only those still ahead, on time; not the device, not the recording; and on /v1/events', async () => {
    const devToken = await stack.userToken('ttl-watcher', 'developer');
    const devEvents = await listenEvents(stack.url, { authorization: `Bearer ${devToken}` });
    const s = await open('ttl-a', 'shell');
    const client = connectStream(s.websocket_url!);
    await client.opened;
    const first = await notice(client, 58);
    expect(first.frame).toEqual({ type: 'notice', code: 'session_expiring', expires_at: s.expires_at, seconds_left: 58, message: noticeText(s, 58) });
    // On time: not before its moment, and soon after it (the poll runs every few ms).
    expect(first.seenAt).toBeGreaterThanOrEqual(Date.parse(s.expires_at) - 58_000 - 50);
    expect(first.seenAt).toBeLessThan(Date.parse(s.expires_at) - 58_000 + 2_000);
    await notice(client, 56);
    expect(client.messages.filter((m) => m.type === 'notice').map((m) => m.seconds_left)).toEqual([58, 56]); // 118 and 116 were past
    // The shell goes on as before.
    client.send(Buffer.from('echo after-$((40+2))\n'));
    await client.waitForOutput(/after-42/);

    const expiring = await waitFor(
      () => {
        const mine = events.events.filter((e) => e.event === 'session.expiring' && e.data.session_id === s.session_id);
        return mine.length >= 2 && mine;
      },
      'two session.expiring events',
      10_000,
    );
    expect(expiring.map((e) => e.data)).toEqual(
      [58, 56].map((left) => ({
        session_id: s.session_id,
        device_id: 'ttl-a',
        protocol: 'shell',
        opened_by: 'admin',
        expires_at: s.expires_at,
        seconds_left: left,
      })),
    );
    expect((await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(200);
    await client.closed;
    const text = await waitFor(async () => {
      const res = await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}/recording?format=text`);
      return res.status === 200 && res.text.includes('after-42') && res.text;
    }, 'the recording');
    expect(text).not.toContain('expires in');
    expect(text).not.toContain('session_expiring');
    // Another user's event stream never carries it.
    expect(devEvents.events.filter((e) => e.event === 'session.expiring')).toEqual([]);
    devEvents.close();
  });
});

describe('extending', () => {
  it('moves expires_at, warns again before the new end, tells the agent, audits it, and the session outlives its first TTL', async () => {
    const s = await open('ttl-b', 'diagnostics');
    const unextended = await open('ttl-a', 'diagnostics');
    const client = connectStream(s.websocket_url!);
    await client.opened;
    await notice(client, 58);
    const before = Date.now() + offset;
    const res = await extend(s.session_id, 120);
    expect(res.status, res.text).toBe(200);
    const extended = res.body.data as Session;
    expect(Date.parse(extended.expires_at)).toBeGreaterThanOrEqual(before + 120_000);
    expect(Date.parse(extended.expires_at)).toBeLessThan(Date.now() + offset + 120_000 + 1000);
    expect(extended.ttl_seconds).toBe(Math.round((Date.parse(extended.expires_at) - Date.parse(s.opened_at)) / 1000));
    expect(extended).toMatchObject({ status: 'open', websocket_url: expect.stringContaining('/stream?ticket=') });

    const again = await notice(client, 118);
    expect(again.frame).toMatchObject({ expires_at: extended.expires_at, message: noticeText(s, 118, extended.expires_at) });
    await agentB.waitForLine(new RegExp(`"session opened".*${s.session_id}.*${extended.expires_at}`));
    const audit = (await stack.admin.get(`/v1/audit/remote-access?session_id=${s.session_id}&event=session.extended`)).body.data;
    expect(audit).toMatchObject([{ event: 'session.extended', actor: 'admin', reason: extended.expires_at, device_id: 'ttl-b' }]);

    offset += 61_000; // the first TTL passes: the session left as it was expires, the extended one stays
    await waitFor(
      async () => (await stack.admin.get(`/v1/remote-access/sessions/${unextended.session_id}`)).body.data.status === 'closed',
      'the other to expire',
      15_000,
    );
    expect((await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.status).toBe('open');
    expect(await client.request('system.info')).toMatchObject({ ok: true });
    offset = 0;
    expect((await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`)).status).toBe(200);
  });

  it('keeps the whole life within 28800 s (400 with details), answers 404 to others, 409 once closed, and replays an Idempotency-Key', async () => {
    const devToken = await stack.userToken('ttl-dev', 'developer');
    const otherToken = await stack.userToken('ttl-other', 'developer');
    const s = await open('ttl-b', 'diagnostics', 60, devToken);

    const tooFar = await extend(s.session_id, 28800, devToken);
    expect(tooFar.status).toBe(400);
    expect(tooFar.body.error).toBe('bad_request');
    const detail = tooFar.body.details[0];
    expect(detail.path).toBe('ttl_seconds');
    const most = Number(/ttl_seconds may be at most (\d+) now/.exec(detail.message)![1]);
    expect(most).toBeLessThan(28800);
    expect(most).toBeGreaterThan(28700);
    const longest = await extend(s.session_id, most, devToken);
    expect(longest.status, longest.text).toBe(200);
    expect(Date.parse(longest.body.data.expires_at) - Date.parse(s.opened_at)).toBeLessThanOrEqual(28_800_000);
    expect(longest.body.data.ttl_seconds).toBeLessThanOrEqual(28800);

    for (const ttl of [59, 28801]) expect((await extend(s.session_id, ttl, devToken)).body.details[0].path).toBe('ttl_seconds');
    expect((await extend(s.session_id, 120, otherToken)).status).toBe(404);
    expect((await extend('sess-nosuchsession0000000', 120)).status).toBe(404);
    expect((await extend(s.session_id, 120)).status).toBe(200); // an administrator may

    const key = { 'idempotency-key': `ttl-${s.session_id}` };
    const first = await extend(s.session_id, 300, devToken, key);
    const replay = await extend(s.session_id, 300, devToken, key);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body.data.expires_at).toBe(first.body.data.expires_at);

    const closed = await stack.as(devToken).del(`/v1/remote-access/sessions/${s.session_id}`);
    expect(closed.body.data).not.toHaveProperty('websocket_url');
    const late = await extend(s.session_id, 120, devToken);
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: 'conflict', message: expect.stringContaining('is closed') });
    // A closed session's record carries no ticket, to its owner or an administrator.
    for (const who of [devToken, stack.adminToken]) {
      expect((await stack.as(who).get(`/v1/remote-access/sessions/${s.session_id}`)).body.data).not.toHaveProperty('websocket_url');
    }
  });
});

describe('the CLI', () => {
  it('`tether shell` prints the notice on its own lines; `tether session extend` moves the end and the shell is warned again', async () => {
    const env = { ...process.env, XDG_CONFIG_HOME: configHome, TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken } as Record<string, string>;
    const term = pty.spawn(process.execPath, [TETHER_BIN, 'shell', 'ttl-cli', '--ttl', '60'], { name: 'xterm-256color', cols: 120, rows: 30, env });
    let output = '';
    term.onData((d) => (output += d));
    const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    try {
      const shown = await waitFor(() => /\r\n\[(tether: this session expires in 58 seconds [^\]]*)\]\r+\n/.exec(output), 'the notice', 20_000);
      const id = /tether session extend (sess-\w+) --ttl SECONDS/.exec(shown[1]!)![1]!;
      const ext = await runTether(['session', 'extend', id, '--ttl', '120'], {
        XDG_CONFIG_HOME: configHome,
        TETHER_SERVER: stack.url,
        TETHER_TOKEN: stack.adminToken,
      });
      expect(ext.code, ext.stderr).toBe(0);
      expect(ext.stdout).toMatch(new RegExp(`^extended ${id}: it now expires at \\S+Z \\(in (1|2) min; 12\\d s since its opening, of at most 28800\\)$`));
      await waitFor(() => output.includes('[tether: this session expires in 118 seconds'), 'the second notice', 15_000);
      term.write('exit 0\r');
      expect(await exited).toBe(0);
    } catch (err) {
      console.log('TERMINAL', JSON.stringify(output));
      throw err;
    } finally {
      term.kill();
    }
  });

  it('`--help` states the TTL default and maximum; an unknown session is explained', async () => {
    for (const args of [['session', 'open'], ['session', 'extend'], ['shell'], ['forward'], ['cp']]) {
      const help = await runTether([...args, '--help']);
      expect(help.stdout, args.join(' ')).toContain('3600');
      if (args[0] !== 'cp') expect(help.stdout, args.join(' ')).toContain('28800');
    }
    const env = { XDG_CONFIG_HOME: configHome, TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken };
    const missing = await runTether(['session', 'extend', 'sess-nosuchsession0000000', '--ttl', '60'], env);
    expect(missing).toMatchObject({ code: 1, stderr: 'tether: no session sess-nosuchsession0000000 that you may extend' });
    expect((await runTether(['session', 'extend', 'sess-x'], env)).code).toBe(2); // --ttl is required
  });
});
