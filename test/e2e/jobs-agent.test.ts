/**
 * Jobs on real agents, end to end (docs/jobs.md, on the device): each kind through the API to two
 * agent processes and back (a diagnostics result as JSON, a command's exit code and output tail
 * run in the files root, a file pushed byte for byte with its mode), and a command that ends while
 * the server is down, reported once when the agent reconnects.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
const roots = { 'job-a': tempDir('tether-job-a-'), 'job-b': tempDir('tether-job-b-') };
const devices = Object.keys(roots) as Array<keyof typeof roots>;

beforeAll(async () => {
  stack = await startStack();
  await Promise.all(devices.map((d) => stack.onlineDevice(d, { TETHER_FILES_ROOT: roots[d] })));
});
afterAll(async () => {
  await stack?.stop();
});

interface Execution {
  device_id: string;
  status: string;
  attempt: number;
  exit_code: number | null;
  output_tail: string | null;
  result: any;
  error: { code: string; message: string } | null;
}

/** Creates a job on both devices, unpaced; returns its id. */
async function createJob(s: Stack, body: Record<string, unknown>, target: string[] = devices): Promise<string> {
  const res = await s.admin.post('/v1/jobs', { target: { device_ids: target }, max_per_minute: null, ...body });
  expect(res.status, res.text).toBe(201);
  return res.body.data.job_id as string;
}

/** Waits for the job to end; returns it and its executions by device. */
async function ended(s: Stack, jobId: string, timeoutMs = 30_000) {
  const job = await waitFor(
    async () => {
      const res = await s.admin.get(`/v1/jobs/${jobId}`);
      return res.body.data.status !== 'in_progress' && res.body.data;
    },
    `job ${jobId} to end`,
    timeoutMs,
  );
  const list = await s.admin.get(`/v1/jobs/${jobId}/executions`);
  const byDevice = Object.fromEntries((list.body.data as Execution[]).map((e) => [e.device_id, e]));
  return { job, byDevice };
}

describe('jobs on real agents', () => {
  it('diagnostics: each device answers system.info as JSON', async () => {
    const { job, byDevice } = await ended(stack, await createJob(stack, { kind: 'diagnostics', op: 'system.info' }));
    expect(job).toMatchObject({ status: 'completed', counts: { succeeded: 2, failed: 0 } });
    for (const d of devices) {
      expect(byDevice[d]).toMatchObject({ status: 'succeeded', attempt: 1, error: null, exit_code: null });
      expect(byDevice[d]!.result).toMatchObject({
        hostname: hostname(),
        arch: process.arch,
        agent_version: expect.any(String),
        cpus: { count: expect.any(Number) },
      });
    }
  });

  it('command: the exit code and the output tail, run in each device’s files root; a non-zero exit fails', async () => {
    const ok = await ended(stack, await createJob(stack, { kind: 'command', argv: ['sh', '-c', 'pwd; echo to-stderr >&2'] }));
    expect(ok.job).toMatchObject({ status: 'completed', counts: { succeeded: 2 } });
    for (const d of devices) {
      expect(ok.byDevice[d]).toMatchObject({ status: 'succeeded', exit_code: 0, error: null });
      // stdout and stderr are two pipes: lines written at once may arrive in either order.
      expect(ok.byDevice[d]!.output_tail!.split('\n').sort()).toEqual(['', roots[d], 'to-stderr'].sort());
    }

    const bad = await ended(stack, await createJob(stack, { kind: 'command', argv: ['sh', '-c', 'echo about to fail; exit 4'] }));
    expect(bad.job).toMatchObject({ status: 'completed', counts: { succeeded: 0, failed: 2 } });
    for (const d of devices) {
      expect(bad.byDevice[d]).toMatchObject({
        status: 'failed',
        exit_code: 4,
        output_tail: 'about to fail\n',
        error: { code: 'exit_nonzero', message: 'exited with status 4' },
      });
    }
  });

  it('file-push: the blob written byte for byte with its mode on two devices', async () => {
    const bytes = randomBytes(1024 * 1024 + 3);
    const uploaded = await fetch(`${stack.url}/v1/blobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(uploaded.status).toBe(201);
    const blob = ((await uploaded.json()) as { data: { blob_id: string; sha256: string } }).data;
    expect(blob.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    writeFileSync(join(roots['job-b'], 'old.bin'), 'replaced');

    const { job, byDevice } = await ended(stack, await createJob(stack, { kind: 'file-push', blob_id: blob.blob_id, path: 'etc/app/key.bin', mode: '0600' }));
    expect(job).toMatchObject({ status: 'completed', counts: { succeeded: 2 } });
    for (const d of devices) {
      expect(byDevice[d]).toMatchObject({ status: 'succeeded', error: null });
      const file = join(roots[d], 'etc/app/key.bin');
      expect(readFileSync(file).equals(bytes)).toBe(true);
      expect(statSync(file).mode & 0o777).toBe(0o600);
    }

    // An existing file is replaced (mode 0644 by default); a link that leads out of the files root is refused on the device.
    const outside = tempDir('tether-job-outside-');
    symlinkSync(outside, join(roots['job-b'], 'out'));
    const again = await ended(stack, await createJob(stack, { kind: 'file-push', blob_id: blob.blob_id, path: 'old.bin' }, ['job-b']));
    expect(again.byDevice['job-b']).toMatchObject({ status: 'succeeded' });
    expect(readFileSync(join(roots['job-b'], 'old.bin')).equals(bytes)).toBe(true);
    expect(statSync(join(roots['job-b'], 'old.bin')).mode & 0o777).toBe(0o644);
    const escape = await ended(stack, await createJob(stack, { kind: 'file-push', blob_id: blob.blob_id, path: 'out/key.bin' }, ['job-b']));
    expect(escape.job).toMatchObject({ status: 'completed', counts: { failed: 1 } });
    expect(escape.byDevice['job-b']).toMatchObject({ status: 'failed', error: { code: 'path_outside_root' } });
    expect(readdirSync(outside)).toEqual([]);
  });

  it('an agent SIGKILLed mid-command: the execution ends agent_restarted once its agent is back, and never runs again', async () => {
    const root = tempDir('tether-job-k-');
    const { token, agent } = await stack.onlineDevice('job-k', { TETHER_FILES_ROOT: root });
    const jobId = await createJob(stack, { kind: 'command', argv: ['sh', '-c', 'echo $$ >> runs; exec sleep 60'] }, ['job-k']);
    const pid = await waitFor(() => Number(readFileSync(join(root, 'runs'), 'utf8').trim()) || undefined, 'the command to start');
    agent.kill('SIGKILL');
    await agent.exited;
    try {
      stack.startAgent('job-k', token, { TETHER_FILES_ROOT: root });
      const { job, byDevice } = await ended(stack, jobId);
      expect(job).toMatchObject({ status: 'completed', counts: { failed: 1 } });
      expect(byDevice['job-k']).toMatchObject({ status: 'failed', attempt: 1, error: { code: 'agent_restarted' } });
      expect(readFileSync(join(root, 'runs'), 'utf8').trim().split('\n')).toEqual([String(pid)]);
    } finally {
      process.kill(-pid, 'SIGKILL'); // the command outlived its agent (it leads a session of its own)
    }
  });

  it('a command that ends while the server is down is reported when the agent reconnects, once', async () => {
    const dataDir = tempDir();
    const root = tempDir('tether-job-c-');
    const first = await startStack({ dataDir });
    let second: Stack | undefined;
    try {
      const { agent } = await first.onlineDevice('job-c', { TETHER_FILES_ROOT: root });
      const jobId = await createJob(
        first,
        { kind: 'command', argv: ['sh', '-c', 'echo start >> runs; while [ ! -e go ]; do sleep 0.05; done; echo finished'] },
        ['job-c'],
      );
      await waitFor(() => existsSync(join(root, 'runs')), 'the command to start');
      await first.stopServer();
      writeFileSync(join(root, 'go'), '');
      await agent.waitForLine(/job attempt ended/); // its result waits on the device
      second = await startStack({ dataDir, port: first.port });
      const { job, byDevice } = await ended(second, jobId);
      expect(job).toMatchObject({ status: 'completed', counts: { succeeded: 1 } });
      expect(byDevice['job-c']).toMatchObject({ status: 'succeeded', attempt: 1, exit_code: 0, output_tail: 'finished\n' });
      expect(readFileSync(join(root, 'runs'), 'utf8')).toBe('start\n');
      expect(agent.stderr.filter((l) => l.includes('connected to broker')).length).toBeGreaterThanOrEqual(2); // it did reconnect
    } finally {
      await second?.stop();
      await first.stop();
    }
  });
});
