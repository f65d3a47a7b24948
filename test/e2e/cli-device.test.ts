/**
 * `tether device list | show | rm | rotate-token` (docs/cli.md) as users run them: the real
 * `dist/tether.cjs` against a real server with real agents, outcomes checked through the API.
 */
import * as pty from 'node-pty';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTether, startProcess, TETHER_BIN } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let env: Record<string, string>;

beforeAll(async () => {
  stack = await startStack();
  env = { XDG_CONFIG_HOME: tempDir('tether-dev-config-'), TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken };
});
afterAll(() => stack.stop());

/** `tether ARGS` as the administrator unless `extra` says otherwise. */
const tether = (args: string[], extra: Record<string, string> = {}) => runTether(args, { ...env, ...extra });

/** Runs `tether ARGS` on a terminal, answering `answer` to its question; its exit code and output. */
async function onTerminal(args: string[], answer: string): Promise<{ code: number; output: string }> {
  const term = pty.spawn(process.execPath, [TETHER_BIN, ...args], { env: { ...process.env, ...env } as Record<string, string> });
  let output = '';
  term.onData((d) => (output += d));
  const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
  try {
    await waitFor(() => output.includes('[y/N] '), 'the question');
    term.write(`${answer}\r`);
    return { code: await exited, output };
  } finally {
    term.kill();
  }
}

const device = (id: string) => stack.admin.get(`/v1/devices/${id}`);

describe('device list', () => {
  it('a table of every device with its agent status; --status filters; --json is the API data', async () => {
    await stack.onlineDevice('dl-online');
    await stack.admin.post('/v1/devices', { device_id: 'dl-offline', labels: { site: 'berlin', rack: '4' } });

    const res = await tether(['device', 'list']);
    expect(res.code).toBe(0);
    const lines = res.stdout.split('\n');
    expect(lines[0]).toMatch(/^DEVICE\s+STATUS\s+LAST SEEN\s+AGENT\s+LABELS$/);
    expect(lines).toContainEqual(expect.stringMatching(/^dl-online\s+online\s+\d{4}-\d\d-\d\dT\S+Z\s+\d+\.\d+\.\d+\s+-$/));
    expect(lines).toContainEqual(expect.stringMatching(/^dl-offline\s+offline\s+-\s+-\s+site=berlin,rack=4$/));

    const online = await tether(['device', 'list', '--status', 'online']);
    expect(online.stdout).toContain('dl-online');
    expect(online.stdout).not.toContain('dl-offline');

    const json = await tether(['device', 'list', '--json']);
    expect(JSON.parse(json.stdout)).toEqual((await stack.admin.get('/v1/devices?per_page=200')).body.data);
    expect((await tether(['device', 'list', '--status', 'asleep'])).code).toBe(2);
  });
});

describe('device show', () => {
  it("shows one device's fields; --json is the API data; an unknown one fails with its code", async () => {
    await stack.onlineDevice('ds-1', { TETHER_FORWARD_ALLOW: '127.0.0.1:5432' });
    const res = await tether(['device', 'show', 'ds-1']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^device +ds-1$/m);
    expect(res.stdout).toMatch(/^status +online$/m);
    expect(res.stdout).toMatch(/^agent version +\d+\.\d+\.\d+$/m);
    expect(res.stdout).toMatch(/^forwards to +127\.0\.0\.1:5432$/m);

    const json = await tether(['device', 'show', 'ds-1', '--json']);
    expect(JSON.parse(json.stdout)).toEqual((await device('ds-1')).body.data);

    expect(await tether(['device', 'show', 'ds-nope'])).toMatchObject({ code: 1, stderr: 'tether: no device ds-nope (not_found)' });
  });
});

describe('device rm', () => {
  it('without a terminal it needs --yes; with it, the device, its sessions and its agent are gone', async () => {
    await stack.onlineDevice('dr-1');
    const session = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'dr-1', protocol: 'diagnostics' })).body.data;

    const refused = await tether(['device', 'rm', 'dr-1']);
    expect(refused).toMatchObject({ code: 2, stderr: 'tether: standard input is not a terminal to confirm on; add --yes to delete device dr-1' });
    expect((await device('dr-1')).status).toBe(200);

    const res = await tether(['device', 'rm', 'dr-1', '--yes']);
    expect(res).toMatchObject({ code: 0, stdout: expect.stringMatching(/^deleted device dr-1: .*closed 1 open session$/) });
    expect((await device('dr-1')).status).toBe(404);
    const closed = (await stack.admin.get(`/v1/remote-access/sessions/${session.session_id}`)).body.data;
    expect(closed).toMatchObject({ status: 'closed', close_reason: 'device_deleted' });

    expect(await tether(['device', 'rm', 'dr-1', '--yes'])).toMatchObject({ code: 1, stderr: 'tether: no device dr-1 (not_found)' });
    expect((await tether(['device', 'rm', 'dr-1', '--yes', '--json'])).code).toBe(1);
  });

  it('on a terminal asks first: no keeps the device, yes deletes it; --json prints the answer', async () => {
    await stack.addDevice('dr-2');
    const no = await onTerminal(['device', 'rm', 'dr-2'], 'n');
    expect(no.code).toBe(1);
    expect(no.output).toContain('delete device dr-2? Its agent (offline) is disconnected for good and its open sessions close. [y/N] ');
    expect(no.output).toContain('tether: cancelled: did not delete device dr-2');
    expect((await device('dr-2')).status).toBe(200);

    const yes = await onTerminal(['device', 'rm', 'dr-2', '--json'], 'y');
    expect(yes.code).toBe(0);
    expect(JSON.parse(yes.output.slice(yes.output.indexOf('{')))).toEqual({ device_id: 'dr-2', deleted: true, sessions_closed: 0 });
    expect((await device('dr-2')).status).toBe(404);
  });

  it('is for administrators: a developer is refused with the code, and the device stays', async () => {
    await stack.addDevice('dr-3');
    const dev = await stack.userToken('dr-dev', 'developer');
    const res = await tether(['device', 'rm', 'dr-3', '--yes'], { TETHER_TOKEN: dev });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^tether: .*administrator.* \(forbidden\)$/);
    expect((await device('dr-3')).status).toBe(200);
  });
});

describe('device rotate-token', () => {
  it('prints a new token and the command to restart the agent; the old agent is cut off, the printed command works', async () => {
    const { token: old, agent } = await stack.onlineDevice('dt-1');
    const res = await tether(['device', 'rotate-token', 'dt-1']);
    expect(res.code).toBe(0);
    const token = /tdev_[A-Za-z0-9_-]+/.exec(res.stdout)![0];
    expect(token).not.toBe(old);
    expect(res.stdout).toContain('the old one no longer works, and an agent connected with it was disconnected');
    expect(res.stdout).toContain(`TETHER_DEVICE_TOKEN=${token} tether agent --server ${stack.url} --device-id dt-1`);
    // and the lines of the packaged agent's /etc/tether/agent.env
    expect(res.stdout).toContain(`  TETHER_SERVER=${stack.url}\n  TETHER_DEVICE_ID=dt-1\n  TETHER_DEVICE_TOKEN=${token}\n`);

    // the agent with the old token is disconnected and refused from then on
    await stack.waitForStatus('dt-1', 'offline');
    await agent.waitForLine(/"status":401/);
    expect(await stack.agentStatus('dt-1')).toBe('offline');
    await agent.stop();

    // the printed command brings the device back
    const fresh = startProcess(['agent', '--server', stack.url, '--device-id', 'dt-1'], { TETHER_DEVICE_TOKEN: token });
    await stack.waitForStatus('dt-1', 'online');
    await fresh.stop();
  });

  it('--json prints the device id and token; unknown devices and non-administrators fail with the code', async () => {
    await stack.addDevice('dt-2');
    const json = await tether(['device', 'rotate-token', 'dt-2', '--json']);
    const issued = JSON.parse(json.stdout);
    expect(issued).toEqual({ device_id: 'dt-2', agent_token: expect.stringMatching(/^tdev_/) });
    const agent = stack.startAgent('dt-2', issued.agent_token);
    await stack.waitForStatus('dt-2', 'online');
    await agent.stop();

    expect(await tether(['device', 'rotate-token', 'dt-nope'])).toMatchObject({ code: 1, stderr: 'tether: no device dt-nope (not_found)' });
    const pe = await stack.userToken('dt-pe', 'platform-engineer');
    expect(await tether(['device', 'rotate-token', 'dt-2'], { TETHER_TOKEN: pe })).toMatchObject({ code: 1, stderr: expect.stringMatching(/\(forbidden\)$/) });
  });
});
