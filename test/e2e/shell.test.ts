/** The shell protocol end to end: a real agent process, a real PTY, through the relay. */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processExists } from '../../agent/shell/process-session';
import type { Proc } from '../helpers/processes';
import { startStack, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let agentPid: number;
let warm: Proc;
beforeAll(async () => {
  stack = await startStack({ joinTimeoutMs: 1500 });
  const { agent } = await stack.onlineDevice('sh-1');
  agentPid = agent.pid;
  warm = agent;
});

/** Resident memory of a process, in bytes (Linux). */
function rss(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}
afterAll(() => stack.stop());

async function openShell(deviceId = 'sh-1') {
  const res = await stack.admin.post('/v1/remote-access/sessions', { device_id: deviceId, protocol: 'shell' });
  expect(res.status).toBe(201);
  return res.body.data as { session_id: string; websocket_url: string };
}

/** Asks the shell for its pid. */
async function shellPid(client: StreamClient): Promise<number> {
  client.send(Buffer.from('echo "pid=<$$>"\n'));
  const text = await client.waitForOutput(/pid=<(\d+)>/);
  return Number(/pid=<(\d+)>/.exec(text)![1]);
}

describe('shell', () => {
  it('runs commands in a login shell with TERM=xterm-256color', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send(Buffer.from('echo hello-$((6*7)) "$TERM"\n'));
    await client.waitForOutput(/hello-42 xterm-256color/).catch((e) => {
      console.log('OUT', JSON.stringify(client.received().toString()), client.messages, warm.stderr.slice(-8).join('\n'));
      throw e;
    });
    client.ws.close();
    await client.closed;
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('hands out a pre-started login shell, and starts one on demand when told not to keep any', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    await client.waitForOutput(/[$#] $/m); // the prompt is there before anything is typed
    client.send(Buffer.from('echo warm-$((2+3))\n'));
    await client.waitForOutput(/warm-5/);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    await warm.waitForLine(/"shell started".*"pre_started":true/);

    const { agent: cold } = await stack.onlineDevice('sh-cold', { TETHER_WARM_SHELL: '0' });
    const c = await openShell('sh-cold');
    const coldClient = connectStream(c.websocket_url);
    await coldClient.opened;
    coldClient.send(Buffer.from('echo cold-$((2+4))\n'));
    await coldClient.waitForOutput(/cold-6/);
    await cold.waitForLine(/"shell started".*"pre_started":false/);
    await stack.admin.del(`/v1/remote-access/sessions/${c.session_id}`);
  });

  it('applies resize messages (stty size)', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send({ type: 'resize', cols: 132, rows: 43 });
    client.send(Buffer.from('stty size\n'));
    await client.waitForOutput(/\b43 132\b/);
    client.send({ type: 'resize', cols: 90, rows: 30 });
    client.send(Buffer.from('stty size\n'));
    await client.waitForOutput(/\b30 90\b/);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect((await client.closed).code).toBe(4000);
  });

  it('delivers every byte of output, then the exit code, then closes', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send(Buffer.from('seq 1 200000; exit 3\n'));
    const closed = await client.closed;
    expect(closed.code).toBe(1000);
    const exitAt = client.frames.findIndex((f) => !Buffer.isBuffer(f) && f.type === 'exit');
    expect(client.frames[exitAt]).toEqual({ type: 'exit', code: 3 });
    expect(exitAt).toBe(client.frames.length - 1); // nothing after the exit message
    const output = client.received().toString('utf8');
    expect(output).toMatch(/\r\n199999\r\n200000\r\n/);
    // the session stays open after the shell ends; a new connection gets a new shell
    expect((await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.status).toBe('open');
    const again = connectStream(s.websocket_url);
    await again.opened;
    again.send(Buffer.from('echo second-$((1+1))\n'));
    await again.waitForOutput(/second-2/);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it("a client that stops reading pauses the PTY: the agent's memory stays flat under endless output", async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    await shellPid(client);
    const before = rss(agentPid);
    client.ws.pause(); // never read again
    client.send(Buffer.from('yes flow-control-test-line\n'));
    // `yes` writes hundreds of MB/s; watch the agent for two seconds of it.
    let peak = 0;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 100));
      peak = Math.max(peak, rss(agentPid));
    }
    expect(peak - before).toBeLessThan(40 * 1024 * 1024);
    client.ws.resume();
    await client.waitForOutput(/flow-control-test-line/);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect((await client.closed).code).toBe(4000);
  });

  it('a large paste reaches the program whole, in order', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send(Buffer.from('stty raw -echo; echo "re""ady"; head -c 300000 | sha256sum; stty sane\n'));
    await client.waitForOutput(/ready/); // raw mode is on: a paste will not be cut into lines
    const paste = Buffer.alloc(300_000);
    for (let i = 0; i < paste.length; i++) paste[i] = 97 + (i % 26);
    for (let i = 0; i < paste.length; i += 16 * 1024) client.send(paste.subarray(i, i + 16 * 1024));
    const digest = createHash('sha256').update(paste).digest('hex');
    await client.waitForOutput(new RegExp(digest));
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('closing the session ends the shell process within 5 s and closes the stream with 4000', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    const pid = await shellPid(client);
    client.send(Buffer.from('sleep 600 &\n'));
    client.send(Buffer.from('echo "bg=<$!>"\n'));
    const bg = Number(/bg=<(\d+)>/.exec(await client.waitForOutput(/bg=<(\d+)>/))![1]);
    expect(processExists(pid) && processExists(bg)).toBe(true);
    const res = await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect(res.status).toBe(200);
    expect(await client.closed).toEqual({ code: 4000, reason: 'session closed' });
    await waitFor(() => !processExists(pid) && !processExists(bg), 'the shell and its job to end', 5000);
  });

  it('a client that disconnects ends the shell; the session stays open', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    const pid = await shellPid(client);
    client.ws.terminate();
    await waitFor(() => !processExists(pid), 'the shell to end', 5000);
    expect((await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.status).toBe('open');
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('counts the bytes both ways, exactly once the session is closed', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send(Buffer.from('echo counted\n'));
    client.send({ type: 'resize', cols: 100, rows: 30 });
    await client.waitForOutput(/[\r\n]counted\r\n/);
    client.send(Buffer.from('exit\n'));
    await client.closed;
    const closed = await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect(closed.body.data.bytes_to_device).toBe(client.sentBytes);
    expect(closed.body.data.bytes_from_device).toBe(client.receivedBytes);
    // flushed within a second while open, too
    const metrics = await stack.admin.get('/metrics');
    expect(Number(/tether_tunnel_bytes_total\{direction="from_device"\} (\d+)/.exec(metrics.text)![1])).toBeGreaterThanOrEqual(client.receivedBytes);
  });

  it('counters are flushed at least every second while open', async () => {
    const s = await openShell();
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send(Buffer.from('echo flushed\n'));
    await client.waitForOutput(/[\r\n]flushed\r\n/);
    await waitFor(
      async () => (await stack.admin.get(`/v1/remote-access/sessions/${s.session_id}`)).body.data.bytes_to_device === client.sentBytes,
      'the counter to be flushed',
      2500,
    );
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });
});

describe('stream admission', () => {
  it('one client at a time: a second one gets 4009', async () => {
    const s = await openShell();
    const first = connectStream(s.websocket_url);
    await first.opened;
    await shellPid(first);
    const second = connectStream(s.websocket_url);
    expect((await second.closed).code).toBe(4009);
    first.send(Buffer.from('echo still-here\n'));
    await first.waitForOutput(/still-here/);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it("4401 without credentials, 4004 with a bad ticket or another session's ticket", async () => {
    const s = await openShell();
    const base = s.websocket_url.split('?')[0]!;
    expect((await connectStream(base).closed).code).toBe(4401);
    expect((await connectStream(`${base}?ticket=forged`).closed).code).toBe(4004);
    const other = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'sh-1', protocol: 'diagnostics' })).body.data;
    const otherTicket = new URL(other.websocket_url).searchParams.get('ticket');
    expect((await connectStream(`${base}?ticket=${otherTicket}`).closed).code).toBe(4004);
    expect((await connectStream(`${base.replace(s.session_id, 'sess-nope')}?ticket=${otherTicket}`).closed).code).toBe(4004);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    await stack.admin.del(`/v1/remote-access/sessions/${other.session_id}`);
  });

  it("the owner's or an administrator's bearer token works instead of the ticket; others get 4004", async () => {
    const peteToken = await stack.userToken('pete', 'platform-engineer');
    const otherToken = await stack.userToken('paula', 'platform-engineer');
    const s = (await stack.as(peteToken).post('/v1/remote-access/sessions', { device_id: 'sh-1', protocol: 'shell' })).body.data;
    const base = s.websocket_url.split('?')[0]!;
    expect((await connectStream(base, { authorization: `Bearer ${otherToken}` }).closed).code).toBe(4004);
    expect((await connectStream(base, { authorization: 'Bearer tth_revoked-or-unknown' }).closed).code).toBe(4401);
    const owner = connectStream(base, { authorization: `Bearer ${peteToken}` });
    await owner.opened;
    await shellPid(owner);
    owner.ws.close();
    await owner.closed;
    const admin = connectStream(base, { authorization: `Bearer ${stack.adminToken}` });
    await admin.opened;
    await shellPid(admin);
    await stack.as(peteToken).del(`/v1/remote-access/sessions/${s.session_id}`);
    expect((await admin.closed).code).toBe(4000);
  });

  it('revoking a token closes its open streams and the sessions it opened (their tickets die too)', async () => {
    const rayToken = await stack.userToken('ray', 'platform-engineer');
    const ray = stack.as(rayToken);
    const rayTokenId = (await ray.get('/v1/me')).body.data.token_id as string;
    // ray's own session, joined with its ticket
    const own = (await ray.post('/v1/remote-access/sessions', { device_id: 'sh-1', protocol: 'shell' })).body.data;
    const byTicket = connectStream(own.websocket_url);
    await byTicket.opened;
    await shellPid(byTicket);
    // a second administrator token, joined by bearer to a session someone else opened
    const adminToken2 = (await stack.admin.post('/v1/tokens', { username: 'admin' })).body.data;
    const other = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'sh-1', protocol: 'diagnostics' })).body.data;
    const byBearer = connectStream(other.websocket_url.split('?')[0], { authorization: `Bearer ${adminToken2.token}` });
    await byBearer.opened;
    expect((await byBearer.request('system.info')).ok).toBe(true);

    expect((await stack.admin.del(`/v1/tokens/${rayTokenId}`)).status).toBe(200);
    expect(await byTicket.closed).toEqual({ code: 4000, reason: 'session closed' });
    const closed = (await stack.admin.get(`/v1/remote-access/sessions/${own.session_id}`)).body.data;
    expect(closed).toMatchObject({ status: 'closed', close_reason: 'closed' });
    const audit = (await stack.admin.get(`/v1/audit/remote-access?session_id=${own.session_id}&event=session.closed`)).body.data;
    expect(audit).toEqual([expect.objectContaining({ actor: 'system', reason: 'token_revoked' })]);
    expect((await connectStream(own.websocket_url).closed).code).toBe(4000); // the ticket is dead

    expect((await stack.admin.del(`/v1/tokens/${adminToken2.token_id}`)).status).toBe(200);
    expect(await byBearer.closed).toEqual({ code: 4401, reason: 'token revoked' });
    // the session it joined is not its own: it stays open for its owner
    expect((await stack.admin.get(`/v1/remote-access/sessions/${other.session_id}`)).body.data.status).toBe('open');
    await stack.admin.del(`/v1/remote-access/sessions/${other.session_id}`);
  });

  it('a closed session refuses new connections with 4000', async () => {
    const s = await openShell();
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    expect((await connectStream(s.websocket_url).closed).code).toBe(4000);
  });

  it('4504 when the device does not join in time; frames sent meanwhile are held, not lost', async () => {
    const { agent } = await stack.onlineDevice('sh-gone');
    const s = await openShell('sh-gone');
    agent.kill('SIGSTOP'); // connected, but not answering
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send(Buffer.from('echo never\n'));
    expect((await client.closed).code).toBe(4504);
    agent.kill('SIGCONT');
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });
});

describe('the shell environment', () => {
  /** Everything `env` prints in a new shell session of `deviceId`. */
  async function envOf(deviceId: string): Promise<string> {
    const s = await openShell(deviceId);
    const client = connectStream(s.websocket_url);
    await client.opened;
    // Quoted apart, so the echo of the typed line does not match.
    client.send(Buffer.from('echo "env-""start"; env; echo "env-""end"\n'));
    const text = await client.waitForOutput(/env-end/);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    return text.slice(text.lastIndexOf('env-start'));
  }

  /** The agent's own variables: its token, its settings, its runtime's flags. */
  const agentEnv = { NODE_OPTIONS: '--max-old-space-size=384', TETHER_LOG_DIRS: '/var/log' };

  function expectNoAgentVariables(env: string, token: string): void {
    expect(env).toMatch(/^HOME=/m); // it is the environment
    expect(env).not.toContain('TETHER_');
    expect(env).not.toContain(token);
    expect(env).not.toContain('NODE_OPTIONS');
  }

  it('holds neither the agent token nor any TETHER_ variable, in a pre-started shell', async () => {
    const { token, agent } = await stack.onlineDevice('sh-env-warm', agentEnv);
    // The first session starts the pool; the second gets the shell that waited for it.
    expectNoAgentVariables(await envOf('sh-env-warm'), token);
    expectNoAgentVariables(await envOf('sh-env-warm'), token);
    expect([...agent.stdout, ...agent.stderr].filter((l) => /"shell started".*"pre_started":true/.test(l))).toHaveLength(2);
  });

  it('holds neither the agent token nor any TETHER_ variable, in a shell started on demand', async () => {
    const { token, agent } = await stack.onlineDevice('sh-env-cold', { ...agentEnv, TETHER_WARM_SHELL: '0' });
    expectNoAgentVariables(await envOf('sh-env-cold'), token);
    await agent.waitForLine(/"shell started".*"pre_started":false/);
  });
});
