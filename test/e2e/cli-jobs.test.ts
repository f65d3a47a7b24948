/**
 * `tether job run | diag | push | list | show | cancel` (docs/cli.md, Jobs) as users run them:
 * the real `dist/tether.cjs` against a real server with real agents, each with its own files
 * root. Checked: the progress lines and the summary, the table of failures with their output,
 * the exit codes (0 all succeeded, 1 otherwise, 2 usage, 130 Ctrl-C without canceling), the
 * bytes and mode a push leaves on each device, `--detach`, `--json`, and cancel.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTether, startProcess } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let configHome: string;
const roots: Record<string, string> = {};

/** Registers a device with labels, starts its agent on a files root of its own, waits until it is online. */
async function labelledDevice(id: string, labels: Record<string, string>): Promise<void> {
  const res = await stack.admin.post('/v1/devices', { device_id: id, labels });
  expect(res.status, res.text).toBe(201);
  roots[id] = tempDir(`tether-${id}-`);
  stack.startAgent(id, res.body.data.agent_token as string, { TETHER_FILES_ROOT: roots[id]! });
  await stack.waitForStatus(id, 'online');
}

beforeAll(async () => {
  stack = await startStack();
  configHome = tempDir('tether-jobs-config-');
  await labelledDevice('cj-a', { fleet: 'cj', site: 'ber' });
  await labelledDevice('cj-b', { fleet: 'cj', site: 'muc' });
  // Registered, never online: its executions stay queued.
  expect((await stack.admin.post('/v1/devices', { device_id: 'cj-off' })).status).toBe(201);
}, 60_000);
afterAll(() => stack.stop());

const env = (token = stack.adminToken) => ({ XDG_CONFIG_HOME: configHome, TETHER_SERVER: stack.url, TETHER_TOKEN: token });
const tether = (args: string[]) => runTether(args, env());
/** No pace: the two devices start at once, so the tests take no longer than their work. */
const FAST = ['--max-per-minute', 'none'];
const jobOf = async (id: string) => (await stack.admin.get(`/v1/jobs/${id}`)).body.data;
const progressLines = (stderr: string) => stderr.split('\n').filter((l) => /^job_\w+(?: \(\w+\))?: \d+\/\d+ done, /.test(l));

describe('job diag', () => {
  it('runs an op on two devices: a progress line per change, a summary and each result; exit 0', async () => {
    const res = await tether(['job', 'diag', '--device', 'cj-a', '--device', 'cj-b', 'system.info', ...FAST]);
    expect(res.code, res.stderr).toBe(0);
    const lines = progressLines(res.stderr);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatch(/^job_\w+ \(completed\): 2\/2 done, 0 failed, 0 running, 0 queued {2}(?:[\d.]+|-)\/min {2}\d+s$/);
    expect(res.stdout).toMatch(/^job_\w+ completed in \d+s: 2 of 2 succeeded$/m);
    expect(res.stdout).toMatch(/^cj-a:\n {2}\S+: .*agent /m);
    expect(res.stdout).toMatch(/^cj-b:\n/m);
    expect(res.stdout).not.toMatch(/did not succeed/);
  });

  it('--json prints the job and its executions, with each result', async () => {
    const res = await tether(['job', 'diag', '--label', 'fleet=cj', '--label', 'site=ber', 'system.info', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout) as { job: { status: string; target: unknown }; executions: Array<{ device_id: string; result: { hostname: string } }> };
    expect(out.job).toMatchObject({ status: 'completed', target: { labels: { fleet: 'cj', site: 'ber' } } });
    expect(out.executions.map((e) => e.device_id)).toEqual(['cj-a']);
    expect(typeof out.executions[0]!.result.hostname).toBe('string');
  });

  it('takes a fleet group by name in a tenant', async () => {
    const acme = { 'x-tenant-id': 'acme' };
    const group = await stack.admin.post('/v1/fleet/groups', { name: 'CJ Vans' }, acme);
    expect(group.status, group.text).toBe(201);
    const groupId = group.body.data.group_id as string;
    const vehicle = await tether(['fleet', 'vehicles', 'register', '1HGCM82633A100001', '--device', 'cj-b', '--group', groupId, '--tenant', 'acme']);
    expect(vehicle.code, vehicle.stderr).toBe(0);
    const res = await tether(['job', 'diag', '--group', 'cj vans', '--tenant', 'acme', 'system.info', '--json']);
    expect(res.code, res.stderr).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out.job.target).toEqual({ group_id: groupId, tenant: 'acme' });
    expect(out.executions.map((e: { device_id: string }) => e.device_id)).toEqual(['cj-b']);
  });
});

describe('job run', () => {
  it('a command failing on one device: exit 1, the failure table with its exit code and output', async () => {
    writeFileSync(join(roots['cj-b']!, 'broken'), '');
    // cwd is each agent's files root: only cj-b has the file.
    const script = 'if [ -f broken ]; then echo "first line"; echo "disk on fire" >&2; exit 3; fi; echo fine';
    const res = await tether(['job', 'run', '--label', 'fleet=cj', ...FAST, '--timeout', '30', '--', 'sh', '-c', script]);
    expect(res.code, res.stderr).toBe(1);
    expect(res.stdout).toMatch(/^job_\w+ completed in \d+s: 1 of 2 succeeded; 1 failed$/m);
    expect(res.stdout).toMatch(/^1 execution did not succeed:\nDEVICE +STATUS +EXIT +ERROR\ncj-b +failed +3 +\S+/m);
    expect(res.stdout).toMatch(/^cj-b output \(2 lines\):\n {2}first line\n {2}disk on fire$/m);
    expect(res.stdout).not.toMatch(/^cj-a/m);
  });

  it('--detach prints the id at once; job show and job list show it', async () => {
    const res = await tether(['job', 'run', '--device', 'cj-a', '--detach', '--', 'echo', 'hello']);
    expect(res.code, res.stderr).toBe(0);
    const id = res.stdout.trim();
    expect(id).toMatch(/^job_\w+$/);
    await waitFor(async () => (await jobOf(id)).status === 'completed', `${id} completed`, 20_000);

    const show = await tether(['job', 'show', id]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(new RegExp(`^job +${id}$`, 'm'));
    expect(show.stdout).toMatch(/^status +completed$/m);
    expect(show.stdout).toMatch(/^runs +echo hello \(timeout 300 s\)$/m);
    expect(show.stdout).toMatch(/^cj-a +succeeded +1 +0 /m);
    const json = JSON.parse((await tether(['job', 'show', id, '--json'])).stdout);
    expect(json.job.job_id).toBe(id);
    expect(json.executions).toMatchObject([{ device_id: 'cj-a', status: 'succeeded', exit_code: 0, output_tail: 'hello\n' }]);

    const list = await tether(['job', 'list', '--status', 'completed']);
    expect(list.stdout).toMatch(new RegExp(`^${id} +command +completed +1/1 done, 0 failed, 0 running, 0 queued +device cj-a `, 'm'));
  });

  it('--detach --json prints the created job', async () => {
    const res = await tether(['job', 'run', '--device', 'cj-a', '--detach', '--json', '--', 'true']);
    expect(res.code, res.stderr).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ kind: 'command', status: 'in_progress', target: { device_ids: ['cj-a'] } });
  });
});

describe('job push', () => {
  it('uploads the file once and writes its bytes with --mode on each device', async () => {
    const file = join(tempDir('tether-push-'), 'ca.pem');
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7919) % 256));
    writeFileSync(file, bytes);
    const res = await tether(['job', 'push', '--label', 'fleet=cj', file, 'certs/ca.pem', '--mode', '0600', ...FAST]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toMatch(/^uploaded .*ca\.pem as blob_\w+ \(68\.4 KiB, sha256 [0-9a-f]{64}\)$/m);
    expect(res.stdout).toMatch(/: 2 of 2 succeeded$/m);
    for (const id of ['cj-a', 'cj-b']) {
      const target = join(roots[id]!, 'certs', 'ca.pem');
      expect(readFileSync(target).equals(bytes), id).toBe(true);
      expect(statSync(target).mode & 0o777).toBe(0o600);
    }
  });
});

describe('following and canceling', () => {
  it('Ctrl-C stops following with 130 and leaves the job running; job cancel cancels it', async () => {
    const follower = startProcess(['job', 'run', '--device', 'cj-off', '--', 'true'], env());
    const line = await follower.waitForLine(/^job_\w+: 0\/1 done, 0 failed, 0 running, 1 queued/);
    const id = /^(job_\w+)/.exec(line)![1]!;
    follower.kill('SIGINT');
    expect((await follower.exited).code).toBe(130);
    expect(follower.stderr.join('\n')).toContain(`To stop it: tether job cancel ${id}`);
    expect((await jobOf(id)).status).toBe('in_progress');

    const cancel = await tether(['job', 'cancel', id]);
    expect(cancel).toMatchObject({ code: 0, stdout: `canceled ${id}: 1 execution canceled` });
    expect(await jobOf(id)).toMatchObject({ status: 'canceled', counts: { canceled: 1, queued: 0 } });
    expect(await tether(['job', 'cancel', id])).toMatchObject({ code: 1, stderr: expect.stringMatching(/\(conflict\)$/) });
  });

  it('a followed job canceled elsewhere ends the following: exit 1, the canceled execution in the table', async () => {
    const follower = startProcess(['job', 'run', '--device', 'cj-off', '--device', 'cj-a', ...FAST, '--', 'true'], env());
    const line = await follower.waitForLine(/^job_\w+: 1\/2 done, 0 failed, 0 running, 1 queued/);
    const id = /^(job_\w+)/.exec(line)![1]!;
    expect((await tether(['job', 'cancel', id])).code).toBe(0);
    expect((await follower.exited).code).toBe(1);
    const out = follower.stdout.join('\n');
    expect(out).toMatch(new RegExp(`^${id} canceled in \\d+s: 1 of 2 succeeded; 1 canceled$`, 'm'));
    expect(out).toMatch(/^cj-off +canceled +- +job_canceled: /m);
  });
});

describe('the end of a job', () => {
  it('an abort rule that trips: the job aborted with its reason, what had not started canceled; exit 1', async () => {
    writeFileSync(join(roots['cj-b']!, 'broken'), '');
    // One at a time, cj-b first (target order): its failure is 100% of one ended execution.
    const args = ['--device', 'cj-b', '--device', 'cj-a', '--max-in-flight', '1', '--abort-pct', '50', '--abort-min', '1', ...FAST];
    const res = await tether(['job', 'run', ...args, '--', 'sh', '-c', 'test ! -f broken']);
    expect(res.code, res.stderr).toBe(1);
    expect(res.stdout).toMatch(/^job_\w+ aborted in \d+s: 0 of 2 succeeded; 1 failed, 1 canceled\naborted: \S.*$/m);
    expect(res.stdout).toMatch(/^cj-b +failed +1 +\S+/m);
    expect(res.stdout).toMatch(/^cj-a +canceled +- +job_aborted: /m);
  });

  it('is followed by reading the job every second when the token may not read the event stream', async () => {
    await stack.admin.post('/v1/users', { username: 'cj-jobs-only', role: 'developer', kind: 'service' });
    const token = (await stack.admin.post('/v1/tokens', { username: 'cj-jobs-only', scopes: ['jobs:read', 'jobs:write'] })).body.data.token as string;
    const before = stack.logs.length;
    const res = await runTether(['job', 'diag', '--device', 'cj-a', 'system.info'], env(token));
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/: 1 of 1 succeeded$/m);
    const events = stack.logs.slice(before).filter((l) => l.includes('"route":"/v1/events"'));
    expect(events.map((l) => JSON.parse(l).status)).toEqual([403]);
  });
});

describe('usage mistakes exit 2 before anything is created', () => {
  it.each([
    [['job', 'run', '--', 'true'], /^tether: no target: name the devices with --device D/],
    [['job', 'run', '--device', 'cj-a', '--label', 'fleet=cj', '--', 'true'], /^tether: --device and --label are two kinds of target; a job has one/],
    [['job', 'run', '--device', 'cj-a', 'true'], /^tether: put the command after --: tether job run TARGET \[RATE\] -- ARGV\.\.\.$/],
    [['job', 'run', '--device', 'cj-a', '--max-in-flight', '0', '--', 'true'], /^tether: --max-in-flight must be a whole number from 1 to 1000/],
    [['job', 'diag', '--device', 'cj-a', 'system.nope'], /^tether: unknown diagnostics op system\.nope/],
    [['job', 'push', '--device', 'cj-a', '/etc/hostname', '../x'], /^tether: PATH is relative to each agent's files root/],
  ])('%j', async (args, message) => {
    const before = (await stack.admin.get('/v1/jobs?per_page=200')).body.data.length as number;
    const res = await tether(args);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(message);
    expect((await stack.admin.get('/v1/jobs?per_page=200')).body.data.length).toBe(before);
  });
});
