/**
 * The agent as an operator meets it (issue "operator experience"): `tether cp` errors that say
 * where the device's files root is, a wrong token refused once in the log and then retried only
 * every few minutes, and quiet human-readable logs on a terminal, JSON lines elsewhere.
 */
import { symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent } from '../../agent/agent';
import { loadAgentConfig } from '../../agent/config';
import { createBackoff } from '../../agent/backoff';
import { createLogger } from '../../shared/log';
import { runTether, TETHER_BIN } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let root: string;

beforeAll(async () => {
  stack = await startStack();
  root = tempDir('tether-op-root-');
  symlinkSync(tempDir('tether-op-outside-'), join(root, 'escape'));
});
afterAll(() => stack.stop());

/** The JSON records among a process's stderr lines (every line, when it logs JSON). */
const records = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
/** How many upgrades the server refused for a bad device id or token so far. */
const refusedUpgrades = (s: Stack) => s.logs.filter((l) => l.includes('agent refused: bad device id or token')).length;

describe('tether cp names the files root of the device', () => {
  const run = (...args: string[]) => runTether(['cp', ...args], { XDG_CONFIG_HOME: tempDir(), TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken });

  it("prints the device's message, with the root and the device, for a path outside the root", async () => {
    await stack.onlineDevice('op-cp', { TETHER_FILES_ROOT: root });
    const local = join(tempDir(), 'app.txt');
    writeFileSync(local, 'app\n');
    const down = await run('op-cp:../../etc/hostname', tempDir());
    expect(down).toMatchObject({ code: 1, stderr: expect.stringContaining(`../../etc/hostname is outside the files root ${root} of op-cp`) });
    const up = await run(local, 'op-cp:escape/');
    expect(up).toMatchObject({ code: 1, stderr: expect.stringContaining(`escape/ leads outside the files root ${root} of op-cp`) });
  });

  it("the issue's two examples: paths missing under the files root say where it is", async () => {
    const build = tempDir();
    writeFileSync(join(build, 'index.html'), '<p>\n');
    const up = await run(build, 'op-cp:/srv/app/');
    expect(up).toMatchObject({ code: 1, stderr: expect.stringContaining(`under the files root ${root} of op-cp`) });
    const down = await run('op-cp:/etc/hostname', tempDir());
    expect(down).toMatchObject({ code: 1, stderr: expect.stringContaining(`/etc/hostname under the files root ${root} of op-cp`) });
  });
});

describe('an agent whose files root is missing', () => {
  it('says so when it starts, and serves everything else', async () => {
    const missing = join(tempDir(), 'not-there');
    const { agent } = await stack.onlineDevice('op-noroot', { TETHER_FILES_ROOT: missing });
    await agent.waitForLine(new RegExp(`the files root ${missing} is not a directory; file transfers fail until it is`));
  });
});

describe('an agent whose token the server refuses', () => {
  it('says so once, with what to do, and then retries only every 5 minutes', async () => {
    const token = await stack.addDevice('op-wrong');
    const agent = stack.startAgent('op-wrong', `${token}x`, { TETHER_LOG_LEVEL: 'debug' });
    await agent.waitForLine(/refuses this agent's token/);
    expect(refusedUpgrades(stack)).toBe(3);
    // the line of the third try comes right after the one that changed the mode
    const tries = await waitFor(() => {
      const found = records(agent.stderr).filter((r) => r.msg === 'broker refused the agent');
      return found.length === 3 && found;
    }, 'the third try logged');
    expect(tries.map((r) => [r.level, r.status])).toEqual([
      ['debug', 401],
      ['debug', 401],
      ['debug', 401],
    ]);
    expect(tries[0]!.delay_ms).toBeLessThanOrEqual(1000); // the backoff, up to the third refusal
    expect(tries[1]!.delay_ms).toBeLessThanOrEqual(2000);
    expect(tries[2]!.delay_ms).toBeGreaterThanOrEqual(0.8 * 5 * 60_000); // then 5 min ± 20 %
    expect(tries[2]!.delay_ms).toBeLessThanOrEqual(1.2 * 5 * 60_000);
    const loud = records(agent.stderr).filter((r) => r.level !== 'debug' && r.msg !== 'agent starting');
    expect(loud).toEqual([
      expect.objectContaining({
        level: 'error',
        status: 401,
        msg:
          "the server refuses this agent's token (401): the device's token was replaced (`tether device rotate-token op-wrong` prints a new one) " +
          'or the device is not registered (`tether device add op-wrong` registers it and prints its token); ' +
          'put the token in TETHER_DEVICE_TOKEN (/etc/tether/agent.env for the packaged agent) and restart the agent; retrying every 5 min',
      }),
    ]);
    expect(agent.stderr.join('\n')).not.toContain(token);
    await agent.stop();
  });

  it('keeps one line over many long waits, and an accepted connection ends them', async () => {
    // A server that knows the device (its data dir, as if restored from a backup) replaces one that does not.
    const knowing = await startStack();
    const token = await knowing.addDevice('op-restored');
    const knowingData = knowing.dataDir;
    await knowing.stop();
    const forgetful = await startStack();
    const lines: string[] = [];
    const config = loadAgentConfig({ server: forgetful.url, deviceId: 'op-restored', token, filesRoot: tempDir(), stateDir: tempDir() }, {});
    const agent = createAgent(config, {
      log: createLogger({ level: 'info', write: (line) => lines.push(line) }),
      backoff: createBackoff({ baseMs: 1000, maxMs: 30_000, stableMs: 10_000, random: () => 0 }),
      refusedRetryMs: 100,
    });
    let restored: Stack | undefined;
    try {
      agent.start();
      // 3 refusals to change the mode, then long waits (shortened here) one after another
      await waitFor(() => refusedUpgrades(forgetful) >= 8, 'eight refused tries', 10_000);
      expect(records(lines)).toEqual([
        expect.objectContaining({ level: 'error', msg: expect.stringMatching(/^the server refuses this agent's token \(401\).*retrying every 0\.1 s$/) }),
      ]);
      await forgetful.stop();
      restored = await startStack({ dataDir: knowingData, port: forgetful.port });
      await restored.waitForStatus('op-restored', 'online');
      await waitFor(() => records(lines).some((r) => r.msg === 'connected to broker'), 'the agent connected');
      expect(records(lines).map((r) => r.msg)).toEqual([
        expect.stringMatching(/^the server refuses this agent's token/),
        "the server accepts this agent's token again",
        'connected to broker',
      ]);
    } finally {
      await agent.stop();
      await restored?.stop();
      await forgetful.stop();
    }
  });
});

describe("the agent's logs", () => {
  it('on a terminal: nothing at info, human-readable warnings', async () => {
    const own = await startStack();
    const token = await own.addDevice('op-tty');
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('TETHER_')) env[k] = v;
    const term = pty.spawn(process.execPath, [TETHER_BIN, 'agent', '--server', own.url, '--device-id', 'op-tty'], {
      cols: 200,
      rows: 30,
      env: { ...env, TETHER_DEVICE_TOKEN: token, TETHER_STATE_DIR: tempDir() },
    });
    let output = '';
    term.onData((d) => (output += d));
    const exited = new Promise<void>((resolve) => term.onExit(() => resolve()));
    try {
      await own.waitForStatus('op-tty', 'online');
      // a served request: the agent has had its welcome, a session and a stream, all logged at info
      const s = (await own.admin.post('/v1/remote-access/sessions', { device_id: 'op-tty', protocol: 'diagnostics' })).body.data;
      const client = connectStream(s.websocket_url);
      await client.opened;
      expect((await client.request('system.info')).ok).toBe(true);
      await own.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
      await client.closed;
      expect(output).toBe('');

      await own.stopServer(); // the agent's next try fails: a warning
      const warned = await waitFor(() => /^(.*warn .*)\r?\n/m.exec(output)?.[1], 'a warning on the terminal');
      expect(warned).toMatch(
        /^\d\d:\d\d:\d\d warn  agent: connection to broker failed; reconnecting device_id=op-tty err="connect ECONNREFUSED 127\.0\.0\.1:\d+" delay_ms=\d+$/,
      );
      expect(output).not.toContain('{');
    } finally {
      term.kill('SIGTERM');
      await exited;
      await own.stop();
    }
  });

  it('on a pipe: JSON lines at info, as before; TETHER_LOG_FORMAT=text forces text', async () => {
    const json = await stack.onlineDevice('op-pipe');
    await json.agent.waitForLine(/connected to broker/);
    const logged = records(json.agent.stderr);
    expect(logged.map((r) => r.msg)).toEqual(expect.arrayContaining(['agent starting', 'connected to broker']));
    expect(logged.find((r) => r.msg === 'connected to broker')).toMatchObject({ level: 'info', component: 'agent', device_id: 'op-pipe' });

    const text = await stack.onlineDevice('op-text', { TETHER_LOG_FORMAT: 'text' });
    const line = await text.agent.waitForLine(/connected to broker/);
    expect(line).toMatch(/^\d\d:\d\d:\d\d info  agent: connected to broker device_id=op-text server_version=\S+ heartbeat_ms=20000$/);
  });

  it('refuses a log level or format it does not know, naming the setting', async () => {
    const agent = stack.startAgent('op-pipe', 'unused', { TETHER_LOG_FORMAT: 'yaml', TETHER_LOG_LEVEL: 'loud' });
    await waitFor(() => agent.child.exitCode !== null, 'the agent to stop at its settings');
    expect(agent.child.exitCode).toBe(2);
    const said = agent.stderr.join('\n');
    expect(said).toContain('must be json or text (TETHER_LOG_FORMAT)');
    expect(said).toContain('must be debug, info, warn or error (TETHER_LOG_LEVEL)');
  });
});
