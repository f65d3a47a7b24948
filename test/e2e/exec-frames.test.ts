/**
 * The exec frames of a `shell` stream joined with `&mode=exec` (docs/session-streams.md, exec),
 * spoken by a plain WebSocket client to a real server and agent process: the mode refused where it
 * does not apply, the first frame's rules and its bound, the frames themselves, and flow control.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let agentPid: number;
beforeAll(async () => {
  stack = await startStack();
  agentPid = (await stack.onlineDevice('exec-1')).agent.pid;
});
afterAll(() => stack.stop());

/** A session's stream joined with `mode` (exec unless said; null: none), with a plain WebSocket client that speaks the frames itself. */
async function rawStream(mode: string | null = 'exec', protocol = 'shell'): Promise<{ client: StreamClient; sessionId: string }> {
  const res = await stack.admin.post('/v1/remote-access/sessions', { device_id: 'exec-1', protocol });
  expect(res.status).toBe(201);
  const client = connectStream(mode === null ? res.body.data.websocket_url : `${res.body.data.websocket_url}&mode=${mode}`);
  await client.opened;
  return { client, sessionId: res.body.data.session_id };
}

/** The stderr bytes of the `stderr` frames so far. */
const stderrOf = (client: StreamClient) => Buffer.concat(client.messages.filter((m) => m.type === 'stderr').map((m) => Buffer.from(m.data, 'base64')));

/** Resident memory of a process, in bytes (Linux). */
const rss = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
/** Bytes a process wrote so far (Linux). */
const written = (pid: number) => Number(/^wchar: (\d+)/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);

describe('exec frames (docs/session-streams.md, exec)', () => {
  it('exec.started, stdout as binary, stderr as base64 text, exit with its signal, then the close', async () => {
    const { client, sessionId } = await rawStream();
    try {
      client.send({ type: 'exec', argv: ['sh', '-c', 'cat; printf "e\\377" >&2; kill -KILL $$'] });
      client.send(Buffer.from([0x69, 0x6e, 0xff])); // bytes, not text
      client.send({ type: 'eof' });
      expect(await client.closed).toEqual({ code: 1000, reason: 'command exited' });
      expect(client.messages[0]).toEqual({ type: 'exec.started' });
      expect(client.received()).toEqual(Buffer.from([0x69, 0x6e, 0xff]));
      expect(stderrOf(client)).toEqual(Buffer.from([0x65, 0xff]));
      expect(client.messages.at(-1)).toEqual({ type: 'exit', code: 137, signal: 'SIGKILL' });
    } finally {
      await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
    }
  });

  it('a shell stream (no mode, or mode=shell) starts its login shell at once and runs no exec request', async () => {
    for (const mode of [null, 'shell']) {
      const { client, sessionId } = await rawStream(mode);
      try {
        // Nothing sent: the prompt comes without waiting for a first frame.
        await client.waitForOutput(/[$#] $/m);
        client.send({ type: 'exec', argv: ['printf', 'not-run'] });
        client.send(Buffer.from('echo shell-$((6*7))\n'));
        await client.waitForOutput(/shell-42/);
        expect(client.messages.filter((m) => m.type === 'exec.started')).toEqual([]);
        expect(client.received().toString()).not.toContain('not-run');
      } finally {
        await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
      }
    }
  });

  it('refuses a mode it does not know, twice given, or on a session that is not a shell (4400), before the device joins', async () => {
    for (const [mode, protocol, reason] of [
      ['bogus', 'shell', 'bad mode "bogus": one of shell, exec'],
      ['exec&mode=shell', 'shell', 'bad mode "exec,shell": one of shell, exec'],
      ['exec', 'diagnostics', 'mode is for shell sessions only; this is a diagnostics session'],
    ] as const) {
      const { client, sessionId } = await rawStream(mode, protocol);
      expect(await client.closed, `${mode} on ${protocol}`).toEqual({ code: 4400, reason });
      expect(client.frames).toEqual([]);
      await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
    }
  });

  it('an exec stream whose first frame is not an exec request, or that gets none within 10 s, is closed with 4400 and runs nothing', async () => {
    const binary = await rawStream();
    binary.client.send(Buffer.from('ls\n'));
    expect(await binary.client.closed).toEqual({ code: 4400, reason: 'bad exec request: the first frame must be {"type":"exec","argv":[…]}' });
    await stack.admin.del(`/v1/remote-access/sessions/${binary.sessionId}`);

    const { client, sessionId } = await rawStream();
    try {
      const opened = performance.now();
      const closed = await client.closed;
      expect(closed).toEqual({ code: 4400, reason: 'no exec request within 10 s' });
      // The bound runs from the device's join, which comes after our connection opened.
      expect(performance.now() - opened).toBeGreaterThanOrEqual(9_900);
      expect(client.frames).toEqual([]);
    } finally {
      await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
    }
  }, 30_000);

  it('refuses an exec request it cannot run as given (4400), and runs nothing', async () => {
    for (const argv of [[], [''], ['a\0b'], Array(65).fill('x'), ['x'.repeat(4097)], 'ls']) {
      const { client, sessionId } = await rawStream();
      client.send({ type: 'exec', argv });
      const closed = await client.closed;
      expect(closed.code, JSON.stringify(argv).slice(0, 40)).toBe(4400);
      expect(closed.reason).toMatch(/^bad exec request/);
      expect(client.received().length).toBe(0);
      await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
    }
  });

  it('holds the command back while the client does not read: 100 MB to a stalled reader costs no memory', async () => {
    const before = rss(agentPid);
    const { client, sessionId } = await rawStream();
    try {
      client.send({ type: 'exec', argv: ['sh', '-c', 'echo pid=$$ >&2; exec head -c 100000000 /dev/zero'] });
      const pid = Number((await waitFor(() => /pid=(\d+)/.exec(stderrOf(client).toString()), 'the pid'))[1]);
      client.ws.pause();
      // Stalled: the command blocks in write once the pipes, the agent, the relay and the socket buffers are full.
      let last = -1;
      await waitFor(
        () => {
          const now = written(pid);
          const still = now === last;
          last = now;
          return still;
        },
        'the command to block',
        20_000,
        300,
      );
      expect(last).toBeLessThan(60 * 1024 * 1024);
      expect(rss(agentPid) - before).toBeLessThan(40 * 1024 * 1024);
      client.ws.resume();
      await client.closed;
      expect(client.received().length).toBe(100_000_000);
      expect(client.messages.at(-1)).toEqual({ type: 'exit', code: 0, signal: null });
    } finally {
      await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
    }
  }, 60_000);
});
