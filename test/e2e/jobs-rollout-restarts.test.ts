/**
 * Jobs are never stuck and never run twice (docs/jobs.md) with real agent processes: a server
 * restart with queued and running executions, an agent SIGKILLed mid-command, an agent whose
 * connection drops while its command runs, and an agent that stops answering (the deadline).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { execOnStore, queryStore } from '../helpers/store';
import { waitFor } from '../helpers/wait';
import { createJob, executionsOf, executionWhen, getJob, jobEnded } from '../helpers/job-rollout';
import { JOB_LIMITS } from '../../shared/api/jobs';

const stacks: Stack[] = [];
afterEach(async () => {
  // the later servers first; the first stack also stops the agents it started
  for (const s of stacks.splice(0).reverse()) await s.stop();
});

async function stack(options: Parameters<typeof startStack>[0] = {}): Promise<Stack> {
  const s = await startStack(options);
  stacks.push(s);
  return s;
}

/** The same data (and port, so the agents find it) served by a new server. */
async function restarted(before: Stack): Promise<Stack> {
  await before.stopServer();
  return stack({ dataDir: before.dataDir, port: before.port });
}

describe('jobs across restarts', () => {
  it('a server restart with queued and running executions: all end, none twice', async () => {
    const first = await stack();
    const devices = ['rs-0', 'rs-1', 'rs-2'];
    await Promise.all(devices.map((d) => first.onlineDevice(d, { TETHER_FILES_ROOT: tempDir() })));
    const job = await createJob(first.admin, {
      kind: 'command',
      target: { device_ids: devices },
      argv: ['sleep', '2'],
      max_per_minute: null,
      max_in_flight: 2,
    });
    await waitFor(async () => (await getJob(first.admin, job.job_id)).counts.in_progress === 2, 'two executions to run');
    expect((await getJob(first.admin, job.job_id)).counts.queued).toBe(1);

    const second = await restarted(first);
    const ended = await jobEnded(second.admin, job.job_id, 40_000);
    expect(ended).toMatchObject({ status: 'completed', counts: { succeeded: 3 } });
    for (const e of await executionsOf(second.admin, job.job_id)) expect(e).toMatchObject({ status: 'succeeded', attempt: 1, exit_code: 0 });
    const audit = await second.admin.get(`/v1/audit/remote-access?job_id=${job.job_id}&event=job.completed`);
    expect(audit.body.data).toHaveLength(1);
  });

  it('an agent SIGKILLed mid-command and started again: the execution ends failed agent_restarted, once', async () => {
    const s = await stack();
    const { token, agent } = await s.onlineDevice('rs-kill', { TETHER_FILES_ROOT: tempDir() });
    const job = await createJob(s.admin, { kind: 'command', target: { device_ids: ['rs-kill'] }, argv: ['sleep', '10'] });
    await executionWhen(s.admin, job.job_id, 'rs-kill', (e) => e.status === 'in_progress', 'to run');
    agent.kill('SIGKILL');
    await agent.exited;
    s.startAgent('rs-kill', token, { TETHER_FILES_ROOT: tempDir() });
    const ended = await jobEnded(s.admin, job.job_id);
    expect(ended).toMatchObject({ status: 'completed', counts: { failed: 1, succeeded: 0, in_progress: 0, queued: 0 } });
    const [e] = await executionsOf(s.admin, job.job_id);
    expect(e).toMatchObject({ status: 'failed', attempt: 1, error: { code: 'agent_restarted' } });
    expect(s.logs.filter((l) => l.includes('ended with its agent’s restart'))).toHaveLength(1);
  });

  it('an agent whose connection drops while its command runs reports the result after reconnecting', async () => {
    const first = await stack();
    await first.onlineDevice('rs-drop', { TETHER_FILES_ROOT: tempDir() });
    const marker = join(tempDir(), 'done');
    const job = await createJob(first.admin, {
      kind: 'command',
      target: { device_ids: ['rs-drop'] },
      argv: ['sh', '-c', `sleep 1; echo finished; touch ${marker}`],
    });
    await executionWhen(first.admin, job.job_id, 'rs-drop', (e) => e.status === 'in_progress', 'to run');
    await first.stopServer();
    // the command ends while no server is there: its result waits on the agent
    await waitFor(() => existsSync(marker), 'the command to finish');
    const second = await stack({ dataDir: first.dataDir, port: first.port });
    const ended = await jobEnded(second.admin, job.job_id, 40_000);
    expect(ended).toMatchObject({ status: 'completed', counts: { succeeded: 1 } });
    const [e] = await executionsOf(second.admin, job.job_id);
    expect(e).toMatchObject({ status: 'succeeded', attempt: 1, exit_code: 0 });
    expect(e!.output_tail).toContain('finished');
  });

  it('an attempt without a report by its deadline ends timed_out no_report', async () => {
    const s = await stack();
    const { agent } = await s.onlineDevice('rs-mute', { TETHER_FILES_ROOT: tempDir() });
    const job = await createJob(s.admin, { kind: 'command', target: { device_ids: ['rs-mute'] }, argv: ['sleep', '5'], timeout_seconds: 3 });
    await executionWhen(s.admin, job.job_id, 'rs-mute', (e) => e.status === 'in_progress', 'to run');
    agent.kill('SIGSTOP');
    try {
      const [row] = await queryStore(s.dataDir, 'SELECT started_at, deadline_at FROM job_executions WHERE job_id = ?', [job.job_id]);
      expect(Date.parse(String(row!.deadline_at)) - Date.parse(String(row!.started_at))).toBe((3 + JOB_LIMITS.deadlineMarginSeconds) * 1000);
      // Its deadline is half a minute away: move it into the past instead of waiting.
      await execOnStore(s.dataDir, `UPDATE job_executions SET deadline_at = '2000-01-01T00:00:00.000Z' WHERE job_id = '${job.job_id}'`);
      const ended = await jobEnded(s.admin, job.job_id);
      expect(ended).toMatchObject({ status: 'completed', counts: { timed_out: 1 } });
      const [e] = await executionsOf(s.admin, job.job_id);
      expect(e).toMatchObject({ status: 'timed_out', attempt: 1, error: { code: 'no_report' } });
    } finally {
      agent.kill('SIGCONT');
    }
    // the server told the agent to stop it; nothing it does after changes the record
    await agent.waitForLine(/job attempt canceled/);
    const [again] = await executionsOf(s.admin, job.job_id);
    expect(again).toMatchObject({ status: 'timed_out', error: { code: 'no_report' } });
  });
});
