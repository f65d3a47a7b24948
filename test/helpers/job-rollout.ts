/**
 * Jobs for the end-to-end tests of the rollout (test/e2e/jobs-rollout*.test.ts): create one, read
 * it and its executions, and wait for it to reach a state, through the real API.
 */
import type { Client } from './http';
import { waitFor } from './wait';
import type { Execution, Job } from '../../shared/api/jobs';

/** An execution as listed. */
export type ExecutionItem = Execution;

/** Creates a job (`body` as `POST /v1/jobs` takes it) and returns it. */
export async function createJob(client: Client, body: Record<string, unknown>): Promise<Job> {
  const res = await client.post('/v1/jobs', body);
  if (res.status !== 201) throw new Error(`POST /v1/jobs: ${res.status} ${res.text}`);
  return res.body.data as Job;
}

export async function getJob(client: Client, jobId: string): Promise<Job> {
  const res = await client.get(`/v1/jobs/${jobId}`);
  if (res.status !== 200) throw new Error(`GET /v1/jobs/${jobId}: ${res.status} ${res.text}`);
  return res.body.data as Job;
}

/** Every execution of the job, in the job's order. */
export async function executionsOf(client: Client, jobId: string): Promise<ExecutionItem[]> {
  const res = await client.get(`/v1/jobs/${jobId}/executions?per_page=1000`);
  if (res.status !== 200) throw new Error(`GET /v1/jobs/${jobId}/executions: ${res.status} ${res.text}`);
  return res.body.data as ExecutionItem[];
}

/** Waits for the job to end (any status but in_progress) and returns it. */
export function jobEnded(client: Client, jobId: string, timeoutMs = 30_000): Promise<Job> {
  return waitFor(
    async () => {
      const job = await getJob(client, jobId);
      return job.status !== 'in_progress' && job;
    },
    `job ${jobId} to end`,
    timeoutMs,
    100,
  );
}

/** Waits until the execution of `deviceId` satisfies `pred` and returns it. */
export function executionWhen(client: Client, jobId: string, deviceId: string, pred: (e: ExecutionItem) => boolean, what: string, timeoutMs = 20_000) {
  return waitFor(
    async () => {
      const e = (await executionsOf(client, jobId)).find((x) => x.device_id === deviceId);
      return e !== undefined && pred(e) && e;
    },
    `${deviceId}'s execution ${what}`,
    timeoutMs,
    50,
  );
}
