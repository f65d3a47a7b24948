/** `tether exec` and `tether shell DEVICE -- CMD`: one command through a real server and agent process, as scripts use ssh (the frames: ./exec-frames.test.ts). */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { processExists } from '../../agent/shell/process-session';
import { TETHER_BIN } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
  await stack.onlineDevice('exec-1');
});
afterAll(() => stack.stop());

const clients = new Set<ChildProcess>();
afterAll(() => {
  for (const child of clients) child.kill('SIGKILL');
});

interface Run {
  child: ChildProcess;
  /** stdout's bytes so far (unless hashed), their count and sha256 once it ended. */
  stdout: Buffer[];
  stderr: () => string;
  done: Promise<{ code: number | null; bytes: number; sha256: string; stdout: Buffer; stderr: string }>;
}

/** Starts `tether ARGS` against `on` with raw stdin/stdout; `keep: false` hashes stdout without keeping it. */
function tether(args: string[], opts: { on?: Stack; input?: Buffer; keep?: boolean; stdin?: 'pipe' | 'open' } = {}): Run {
  const on = opts.on ?? stack;
  const child = spawn(process.execPath, [TETHER_BIN, ...args], {
    env: { ...process.env, TETHER_SERVER: on.url, TETHER_TOKEN: on.adminToken, XDG_CONFIG_HOME: on.dataDir },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  clients.add(child);
  const stdout: Buffer[] = [];
  const errs: Buffer[] = [];
  const hash = createHash('sha256');
  let bytes = 0;
  child.stdout!.on('data', (c: Buffer) => {
    bytes += c.length;
    hash.update(c);
    if (opts.keep !== false) stdout.push(c);
  });
  child.stderr!.on('data', (c: Buffer) => errs.push(c));
  child.stdin!.on('error', () => {}); // the command may end before it read everything
  if (opts.stdin !== 'open') child.stdin!.end(opts.input ?? Buffer.alloc(0));
  const stderr = () => Buffer.concat(errs).toString();
  const done = new Promise<{ code: number | null; bytes: number; sha256: string; stdout: Buffer; stderr: string }>((resolve) =>
    child.once('close', (code) => {
      clients.delete(child);
      resolve({ code, bytes, sha256: hash.digest('hex'), stdout: Buffer.concat(stdout), stderr: stderr() });
    }),
  );
  return { child, stdout, stderr, done };
}

const sha = (data: Buffer) => createHash('sha256').update(data).digest('hex');

async function openSessions(deviceId: string, on = stack): Promise<unknown[]> {
  const res = await on.admin.get(`/v1/remote-access/sessions?device_id=${deviceId}&status=open`);
  return res.body.data as unknown[];
}

/** Waits for a line `pid=N` on the run's stderr; the command's pid on the device. */
async function pidOf(run: Run): Promise<number> {
  const line = await waitFor(() => /pid=(\d+)/.exec(run.stderr()), 'the command to print its pid');
  return Number(line[1]);
}

describe('tether exec', () => {
  it('streams stdout and stderr apart and exits with the exit code; the session is closed after', async () => {
    const r = await tether(['exec', 'exec-1', 'sh', '-c', 'echo out; echo err >&2; exit 3']).done;
    expect(r).toMatchObject({ code: 3, stderr: 'err\n' });
    expect(r.stdout.toString()).toBe('out\n');
    expect(await openSessions('exec-1')).toEqual([]);
    // Recorded as a terminal shows it: the command line, its stdout and its stderr, then its end.
    const [last] = (await stack.admin.get('/v1/remote-access/sessions?device_id=exec-1&per_page=1')).body.data;
    const cast = await waitFor(async () => {
      const res = await stack.admin.get(`/v1/remote-access/sessions/${last.session_id}/recording`);
      return res.status === 200 && res.text.includes('"exit 3"') && res.text;
    }, 'the recording');
    const events = cast
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((line: string) => JSON.parse(line) as [number, string, string]);
    expect(events.map(([, code, data]) => [code, data])).toEqual([
      ['m', "exec sh -c 'echo out; echo err >&2; exit 3'"],
      ...(events.findIndex(([, , d]) => d === 'err\n') < events.findIndex(([, , d]) => d === 'out\n')
        ? [
            ['o', 'err\n'],
            ['o', 'out\n'],
          ]
        : [
            ['o', 'out\n'],
            ['o', 'err\n'],
          ]),
      ['m', 'exit 3'],
    ]);
    const text = await stack.admin.get(`/v1/remote-access/sessions/${last.session_id}/recording?format=text`);
    expect(text.text.split('\n').sort()).toEqual(['', 'err', 'out']);
  });

  it('runs argv without a shell, in the home directory, with the environment minus TERM and TETHER_*', async () => {
    const r = await tether(['exec', 'exec-1', 'sh', '-c', 'pwd; echo "term=${TERM-unset} token=${TETHER_DEVICE_TOKEN-unset}"; echo $0']).done;
    const [pwd, env] = r.stdout.toString().split('\n');
    expect(r.code).toBe(0);
    expect(pwd).toBe(process.env.HOME);
    expect(env).toBe('term=unset token=unset');
    // No shell between: a `*` reaches the program as it was given.
    const star = await tether(['exec', 'exec-1', 'printf', '%s\\n', '*', '$HOME']).done;
    expect(star.stdout.toString()).toBe('*\n$HOME\n');
  });

  it('passes stdin through byte for byte, and its end as end-of-file (5 MB)', async () => {
    const input = randomBytes(5 * 1024 * 1024);
    const cat = await tether(['exec', 'exec-1', 'cat'], { input, keep: false }).done;
    expect(cat).toMatchObject({ code: 0, bytes: input.length, sha256: sha(input) });
    const wc = await tether(['exec', 'exec-1', 'wc', '-c'], { input }).done;
    expect(wc.stdout.toString().trim()).toBe(String(input.length));
  });

  it('carries a big output byte for byte (50 MB)', async () => {
    const file = join(tempDir('tether-exec-'), 'big.bin');
    const data = randomBytes(50 * 1024 * 1024);
    writeFileSync(file, data);
    const r = await tether(['exec', 'exec-1', 'cat', file], { keep: false }).done;
    expect(r).toMatchObject({ code: 0, bytes: data.length, sha256: sha(data) });
  }, 60_000);

  it('-n sends no input: the command reads end-of-file while our stdin stays open', async () => {
    const r = await tether(['exec', '-n', 'exec-1', 'wc', '-c'], { stdin: 'open' }).done;
    expect(r).toMatchObject({ code: 0 });
    expect(r.stdout.toString().trim()).toBe('0');
  });

  it('a command not found exits 127 with a message; a signal-killed one 128+N', async () => {
    const missing = await tether(['exec', 'exec-1', 'no-such-command-here', '--flag']).done;
    expect(missing).toMatchObject({ code: 127, stderr: 'no-such-command-here: command not found\n' });
    const killed = await tether(['exec', 'exec-1', 'sh', '-c', 'echo before; kill -TERM $$']).done;
    expect(killed).toMatchObject({ code: 143 });
    expect(killed.stdout.toString()).toBe('before\n');
    const segv = await tether(['exec', 'exec-1', 'sh', '-c', 'kill -SEGV $$']).done;
    expect(segv.code).toBe(139);
    expect(await openSessions('exec-1')).toEqual([]);
  });

  it('parses -- as ssh does: tether shell DEV -- ls -la, tether exec DEV [--] ls -la', async () => {
    const dir = tempDir('tether-exec-ls-');
    writeFileSync(join(dir, '.hidden-file'), 'x');
    for (const args of [
      ['shell', 'exec-1', '--', 'ls', '-la', dir],
      ['exec', 'exec-1', 'ls', '-la', dir],
      ['exec', 'exec-1', '--', 'ls', '-la', dir],
    ]) {
      const r = await tether(args).done;
      expect(r.code, args.join(' ')).toBe(0);
      expect(r.stdout.toString()).toMatch(/^total \d+/); // -l
      expect(r.stdout.toString()).toContain('.hidden-file'); // -a
    }
    const usage = await tether(['exec', 'exec-1']).done;
    expect(usage.code).toBe(2);
  });

  it('Ctrl-C (SIGINT) closes the session, which ends the command; exit 130', async () => {
    const run = tether(['exec', 'exec-1', 'sh', '-c', 'echo pid=$$ >&2; exec sleep 60'], { stdin: 'open' });
    const pid = await pidOf(run);
    run.child.kill('SIGINT');
    expect((await run.done).code).toBe(130);
    await waitFor(() => !processExists(pid), 'the command to end', 5000);
    expect(await openSessions('exec-1')).toEqual([]);
  });

  it('a device that goes away mid-command exits 255, apart from any exit code', async () => {
    const { agent } = await stack.onlineDevice('exec-gone');
    const run = tether(['exec', 'exec-gone', 'sh', '-c', 'echo pid=$$ >&2; exec sleep 60'], { stdin: 'open' });
    const pid = await pidOf(run);
    try {
      agent.kill('SIGKILL');
      const r = await run.done;
      expect(r.code).toBe(255);
      expect(r.stderr).toMatch(/^tether: /m);
    } finally {
      // A killed agent cannot end what it started (a stopped one does: the next test).
      if (processExists(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('a server that shuts down mid-command exits 255; the agent then ends the command', async () => {
    const other = await startStack();
    try {
      await other.onlineDevice('exec-srv');
      const run = tether(['exec', 'exec-srv', 'sh', '-c', 'echo pid=$$ >&2; exec sleep 60'], { on: other, stdin: 'open' });
      const pid = await pidOf(run);
      await other.stopServer();
      const r = await run.done;
      expect(r.code).toBe(255);
      expect(r.stderr).toContain('tether: the server is shutting down');
      await waitFor(() => !processExists(pid), 'the command to end', 5000);
    } finally {
      await other.stop();
    }
  });
});
