/**
 * Jobs under attack and at their edges (docs/jobs.md): a result too big for the control channel
 * fails its execution instead of cutting the agent off for ever; an agent that reports for another
 * device's execution, or floods the server with job messages, changes nothing it does not hold and
 * costs the server a bounded amount of work; a late result changes nothing; a failure recorded
 * just before a restart still trips the abort rule.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { AGENT_CONNECT_PATH } from '../../shared/protocol/control-channel';
import { AGENT_SUBPROTOCOL } from '../../shared/version';
import { createJob, executionsOf, jobEnded } from '../helpers/job-rollout';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { execOnStore } from '../helpers/store';
import { waitFor } from '../helpers/wait';

let stack: Stack;
const logDir = tempDir('tether-jobs-hostile-logs-');

beforeAll(async () => {
  stack = await startStack();
  await stack.onlineDevice('hx-logs', { TETHER_LOG_DIRS: logDir });
});
afterAll(async () => {
  await stack?.stop();
});

/** A bare control connection speaking the agent protocol for `deviceId`, collecting what the relay sends. */
async function rawAgent(deviceId: string, token: string) {
  const ws = new WebSocket(`${stack.url.replace('http', 'ws')}${AGENT_CONNECT_PATH}`, AGENT_SUBPROTOCOL, {
    headers: { authorization: `Bearer ${token}`, 'x-tether-device-id': deviceId },
  });
  const received: Array<Record<string, unknown>> = [];
  ws.on('message', (data) => received.push(JSON.parse(data.toString()) as Record<string, unknown>));
  ws.on('error', () => {});
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', () => reject(new Error(`agent ${deviceId} refused`)));
  });
  await waitFor(() => received.some((m) => m.type === 'welcome'), `${deviceId}'s welcome`);
  return { ws, received, closed, send: (msg: unknown) => ws.send(JSON.stringify(msg)) };
}

describe('jobs against hostile input', () => {
  it('a diagnostics result too big for the control channel fails result_too_large; the agent stays connected', async () => {
    // 3,000 lines of 60 bytes: log.tail answers ~190 KB of JSON, the control channel takes 64 KiB frames.
    writeFileSync(join(logDir, 'big.log'), Array.from({ length: 3000 }, (_, i) => `line ${String(i).padStart(5, '0')} ${'x'.repeat(48)}`).join('\n') + '\n');
    const big = await createJob(stack.admin, {
      kind: 'diagnostics',
      op: 'log.tail',
      params: { path: join(logDir, 'big.log'), lines: 3000 },
      target: { device_ids: ['hx-logs'] },
    });
    expect(await jobEnded(stack.admin, big.job_id, 20_000)).toMatchObject({ status: 'completed', counts: { failed: 1 } });
    const [e] = await executionsOf(stack.admin, big.job_id);
    expect(e).toMatchObject({ status: 'failed', attempt: 1, result: null, error: { code: 'result_too_large' } });
    expect(e!.error!.message).toMatch(/at most \d+ bytes/);
    // The agent was never cut off: it is online and runs the next job (a small tail of the same file).
    expect(await stack.agentStatus('hx-logs')).toBe('online');
    const small = await createJob(stack.admin, {
      kind: 'diagnostics',
      op: 'log.tail',
      params: { path: join(logDir, 'big.log'), lines: 5 },
      target: { device_ids: ['hx-logs'] },
    });
    expect(await jobEnded(stack.admin, small.job_id, 20_000)).toMatchObject({ status: 'completed', counts: { succeeded: 1 } });
    const [s] = await executionsOf(stack.admin, small.job_id);
    expect((s!.result as { lines: string[] }).lines).toHaveLength(5);
  });

  it('a result for another device’s execution is acknowledged and changes nothing; the real one is recorded', async () => {
    const victim = await rawAgent('hx-victim', await stack.addDevice('hx-victim'));
    const liar = await rawAgent('hx-liar', await stack.addDevice('hx-liar'));
    for (const a of [victim, liar]) a.send({ type: 'jobs.running', running: [] });
    const job = await createJob(stack.admin, { kind: 'command', argv: ['true'], target: { device_ids: ['hx-victim'] }, max_per_minute: null });
    const run = await waitFor(() => victim.received.find((m) => m.type === 'job.run'), 'the victim’s job.run');
    const ref = { execution_id: run.execution_id, attempt: run.attempt };
    liar.send({ type: 'job.result', ...ref, status: 'succeeded', exit_code: 0, output_tail: 'forged' });
    await waitFor(() => liar.received.some((m) => m.type === 'job.ack' && m.execution_id === ref.execution_id), 'the liar’s ack');
    expect((await executionsOf(stack.admin, job.job_id))[0]).toMatchObject({ device_id: 'hx-victim', status: 'in_progress', output_tail: null });
    victim.send({
      type: 'job.result',
      ...ref,
      status: 'failed',
      exit_code: 3,
      output_tail: 'real',
      error: { code: 'exit_nonzero', message: 'exited with status 3' },
    });
    expect(await jobEnded(stack.admin, job.job_id)).toMatchObject({ status: 'completed', counts: { failed: 1, succeeded: 0 } });
    expect((await executionsOf(stack.admin, job.job_id))[0]).toMatchObject({ status: 'failed', exit_code: 3, output_tail: 'real' });
    for (const a of [victim, liar]) a.ws.close();
  });

  it('an agent flooding job messages gets a bounded share of the server’s work; it is logged once', async () => {
    const flood = await rawAgent('hx-flood', await stack.addDevice('hx-flood'));
    const sent = 20_000;
    for (let i = 0; i < sent; i++) flood.send({ type: 'job.result', execution_id: `exe_forged${i}`, attempt: 1, status: 'succeeded' });
    // Every message reached the server (a ping after them is answered), and most were dropped unrecorded.
    const ponged = new Promise<void>((resolve) => flood.ws.once('pong', () => resolve()));
    flood.ws.ping();
    await ponged;
    await waitFor(() => stack.logs.some((l) => l.includes('an agent floods its job messages') && l.includes('hx-flood')), 'the flood warning');
    // What was taken is recorded and acknowledged: wait until the acks stop coming.
    const acks = () => flood.received.filter((m) => m.type === 'job.ack').length;
    let last = -1;
    await waitFor(() => acks() > 0 && last === (last = acks()), 'the acks to settle', 10_000, 200);
    expect(acks()).toBeLessThan(sent / 2);
    expect(stack.logs.filter((l) => l.includes('an agent floods its job messages')).length).toBeLessThan(50);
    // The server still serves this agent and others.
    expect((await stack.admin.get('/v1/jobs')).status).toBe(200);
    flood.ws.close();
  });

  it('a result that comes after the deadline ended the attempt is acknowledged and changes nothing', async () => {
    const late = await rawAgent('hx-late', await stack.addDevice('hx-late'));
    late.send({ type: 'jobs.running', running: [] });
    const job = await createJob(stack.admin, { kind: 'command', argv: ['true'], target: { device_ids: ['hx-late'] } });
    const run = await waitFor(() => late.received.find((m) => m.type === 'job.run'), 'the job.run');
    await execOnStore(stack.dataDir, `UPDATE job_executions SET deadline_at = '2000-01-01T00:00:00.000Z' WHERE job_id = '${job.job_id}'`);
    expect(await jobEnded(stack.admin, job.job_id)).toMatchObject({ status: 'completed', counts: { timed_out: 1 } });
    await waitFor(() => late.received.some((m) => m.type === 'job.cancel' && m.execution_id === run.execution_id), 'the job.cancel');
    late.send({ type: 'job.result', execution_id: run.execution_id, attempt: run.attempt, status: 'succeeded', exit_code: 0 });
    await waitFor(() => late.received.some((m) => m.type === 'job.ack' && m.execution_id === run.execution_id), 'the ack');
    expect((await executionsOf(stack.admin, job.job_id))[0]).toMatchObject({ status: 'timed_out', exit_code: null, error: { code: 'no_report' } });
    late.ws.close();
  });
});

describe('jobs across a restart', () => {
  it('a failure recorded just before a restart still trips the abort rule after it', async () => {
    const first = await startStack();
    let second: Stack | undefined;
    try {
      // Two devices without agents: their executions wait queued.
      for (const d of ['hx-ab-0', 'hx-ab-1', 'hx-ab-2']) await first.addDevice(d);
      const job = await createJob(first.admin, {
        kind: 'command',
        argv: ['true'],
        target: { device_ids: ['hx-ab-0', 'hx-ab-1', 'hx-ab-2'] },
        abort_failure_pct: 50,
        abort_min_executed: 1,
      });
      await first.stopServer();
      // As if the server had recorded a result and died before applying the job's rules.
      await execOnStore(
        first.dataDir,
        `UPDATE job_executions SET status = 'failed', attempt = 1, error_code = 'exit_nonzero', error_message = 'exited with status 1', finished_at = '${new Date().toISOString()}' WHERE job_id = '${job.job_id}' AND device_id = 'hx-ab-0'`,
      );
      second = await startStack({ dataDir: first.dataDir });
      const ended = await jobEnded(second.admin, job.job_id, 15_000);
      expect(ended).toMatchObject({ status: 'aborted', counts: { failed: 1, canceled: 2, queued: 0 } });
      expect(ended.abort_reason).toBe('1 of 1 executions failed (100% ≥ 50%)');
    } finally {
      await second?.stop();
      await first.stop();
    }
  });
});
