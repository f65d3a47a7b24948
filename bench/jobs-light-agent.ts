/**
 * @module The job protocol (shared/protocol/jobs.ts) for the bench's light agents (`swarm.ts
 * agents`): after each `welcome` they report `jobs.running`, answer every `job.run` at once
 * without running anything (a small `system.info`-like result for diagnostics, exit code 0 for
 * a command; a file-push fails, they fetch no blob), keep each result until its `job.ack` and send
 * it again after a reconnect, as a real agent does. So the server's dispatcher is what is measured.
 */
import type { WebSocket } from 'ws';
import { MAX_RUNNING_JOBS, type JobResultMessage, type JobRunMessage, type JobsRunningMessage } from '../shared/protocol/jobs';

/** One device's job state, kept across its connections. */
export interface LightJobs {
  /** Speaks the job protocol on this (new) connection of the device. */
  attach(ws: WebSocket): void;
}

type Attempt = { execution_id: string; attempt: number };
const keyOf = (a: Attempt) => `${a.execution_id}/${a.attempt}`;

/** What a light agent answers: no work is done, so the server's side is all that costs. */
function resultOf(deviceId: string, run: JobRunMessage): JobResultMessage {
  const ref = { type: 'job.result' as const, execution_id: run.execution_id, attempt: run.attempt };
  switch (run.work.kind) {
    case 'diagnostics':
      return {
        ...ref,
        status: 'succeeded',
        result: {
          hostname: deviceId,
          os: 'bench light agent',
          kernel: 'none',
          arch: process.arch,
          uptime_s: Math.round(process.uptime()),
          cpus: { count: 1, model: 'light' },
          agent_version: 'light',
        },
      };
    case 'command':
      return { ...ref, status: 'succeeded', exit_code: 0, output_tail: '' };
    default:
      return { ...ref, status: 'failed', error: { code: 'op_failed', message: 'a light bench agent does not fetch blobs' } };
  }
}

export function lightJobs(deviceId: string): LightJobs {
  // Results the server has not acknowledged yet; at most one per attempt, so bounded by the attempts started.
  const unacked = new Map<string, JobResultMessage>();
  return {
    attach(ws) {
      const send = (msg: JobResultMessage | JobsRunningMessage) => ws.send(JSON.stringify(msg));
      ws.on('message', function onJobMessage(data: Buffer, isBinary: boolean) {
        if (isBinary) return;
        let msg: { type?: unknown } & Partial<Attempt>;
        try {
          msg = JSON.parse(data.toString()) as typeof msg;
        } catch {
          return; // not ours to judge: the light agent reads only what it understands
        }
        if (msg.type === 'welcome') {
          // The attempts with a result waiting, then those results (the protocol's order).
          const running = [...unacked.values()].slice(0, MAX_RUNNING_JOBS).map((r) => ({ execution_id: r.execution_id, attempt: r.attempt }));
          send({ type: 'jobs.running', running });
          for (const r of unacked.values()) send(r);
        } else if (msg.type === 'job.run') {
          const run = msg as JobRunMessage;
          const key = keyOf(run);
          // A second job.run of an attempt already answered gets the same result again.
          const result = unacked.get(key) ?? resultOf(deviceId, run);
          unacked.set(key, result);
          send(result);
        } else if (msg.type === 'job.ack' || msg.type === 'job.cancel') {
          unacked.delete(keyOf(msg as Attempt));
        }
      });
    },
  };
}
