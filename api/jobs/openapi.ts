/** @module The OpenAPI operations of jobs and blobs (./routes.ts, ./blobs.ts). */
import { z } from 'zod';
import { blob, createJobBody, execution, executionsQuery, job, JOB_LIMITS, jobsQuery } from '../../shared/api/jobs';
import { listBody, okBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

const jobBody = okBody('JobResponse', job);
const jobId = { jobId: 'the job’s id (job_…)' };
const blobId = { blobId: 'the blob’s id (blob_…)' };
const bytes = { type: 'string', contentMediaType: 'application/octet-stream' };

export const jobOperations: OperationSpec[] = [
  {
    method: 'post',
    path: '/v1/jobs',
    operationId: 'createJob',
    tag: 'jobs',
    summary: 'Run one operation on many devices',
    description:
      'Scope `jobs:write`; `diagnostics` developer and up, `command` platform-engineer and up, `file-push` administrator. ' +
      'The target is fixed now: `device_ids` (all registered; duplicates folded), a fleet group (`group_id` and `tenant`: the token ' +
      'needs the tenant and `fleet:read`, as the fleet interface; its vehicles’ registered devices), or `labels` (devices with all of them). ' +
      'Every execution starts `queued`; they start at `max_per_minute` (evenly; null: no pace), at most `max_in_flight` at once. ' +
      'Audited (`job.created`); published as `job.updated`.',
    auth: 'bearer',
    idempotent: true,
    body: { schema: createJobBody },
    responses: { 201: { description: 'the job, every execution queued', json: okBody('JobCreatedResponse', job, 201) } },
    errors: {
      400: 'malformed body',
      403: 'role or scope missing for the kind; for a group target, the tenant or `fleet:read` missing',
      404: 'no such group in the tenant',
      422: 'unknown device ids (named), a group or selector with no device, more than 10000 devices, or no such blob',
    },
  },
  {
    method: 'get',
    path: '/v1/jobs',
    operationId: 'listJobs',
    tag: 'jobs',
    summary: 'Jobs, newest first',
    description: 'Your own (administrators: all). Developer and up, scope `jobs:read`.',
    auth: 'bearer',
    query: jobsQuery,
    responses: { 200: { description: 'a page of jobs', json: listBody('JobListResponse', job) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'role or scope missing' },
  },
  {
    method: 'get',
    path: '/v1/jobs/{jobId}',
    operationId: 'getJob',
    tag: 'jobs',
    summary: 'A job, with its executions counted by status',
    description: 'Its creator or an administrator, scope `jobs:read`; anyone else gets 404.',
    auth: 'bearer',
    params: jobId,
    responses: { 200: { description: 'the job', json: jobBody } },
    errors: { 403: 'role or scope missing', 404: 'no such job, or not yours' },
  },
  {
    method: 'post',
    path: '/v1/jobs/{jobId}/cancel',
    operationId: 'cancelJob',
    tag: 'jobs',
    summary: 'Cancel a job',
    description:
      'Its creator or an administrator, scope `jobs:write`. The job becomes `canceled` and its queued executions `canceled` ' +
      '(error `job_canceled`); those in progress run to their end and are still recorded. Audited (`job.canceled`); published as `job.updated`.',
    auth: 'bearer',
    idempotent: true,
    params: jobId,
    responses: { 200: { description: 'the canceled job', json: jobBody } },
    errors: { 403: 'role or scope missing', 404: 'no such job, or not yours', 409: 'the job has already ended' },
  },
  {
    method: 'get',
    path: '/v1/jobs/{jobId}/executions',
    operationId: 'listJobExecutions',
    tag: 'jobs',
    summary: 'A job’s executions, in target order',
    description: 'Its creator or an administrator, scope `jobs:read`; anyone else gets 404. `output_tail`: the last 4 KiB of stdout and stderr.',
    auth: 'bearer',
    params: jobId,
    query: executionsQuery,
    responses: { 200: { description: 'a page of executions', json: listBody('JobExecutionListResponse', execution) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'role or scope missing', 404: 'no such job, or not yours' },
  },
  {
    method: 'post',
    path: '/v1/blobs',
    operationId: 'uploadBlob',
    tag: 'jobs',
    summary: 'Upload a file for file-push jobs',
    description: `Administrator, scope \`jobs:write\`. The body is the file, \`application/octet-stream\`, at most ${JOB_LIMITS.maxBlobBytes} bytes (256 MiB); a larger one is refused and nothing is kept.`,
    auth: 'bearer',
    body: { schema: z.string().describe('the file’s bytes'), mediaTypes: ['application/octet-stream'], maxBytes: JOB_LIMITS.maxBlobBytes },
    responses: { 201: { description: 'the blob, with its size and SHA-256', json: okBody('BlobCreatedResponse', blob, 201) } },
    errors: { 403: 'role or scope missing', 415: 'the body is not application/octet-stream' },
  },
  {
    method: 'get',
    path: '/v1/blobs/{blobId}',
    operationId: 'getBlob',
    tag: 'jobs',
    summary: 'A blob’s size and SHA-256',
    description: 'Administrator, scope `jobs:read`.',
    auth: 'bearer',
    params: blobId,
    responses: { 200: { description: 'the blob', json: okBody('BlobResponse', blob) } },
    errors: { 403: 'role or scope missing', 404: 'no such blob' },
  },
  {
    method: 'get',
    path: '/v1/agent/blobs/{blobId}',
    operationId: 'fetchAgentBlob',
    tag: 'jobs',
    summary: 'A blob’s bytes, for an agent running a file-push of it',
    description:
      'For agents, not operators: `Authorization: Bearer <device token>` and `x-tether-device-id`, as on the control channel. ' +
      'Answers only while that device has a file-push execution of this blob in progress.',
    auth: 'public',
    params: blobId,
    responses: { 200: { description: 'the blob’s bytes, with Content-Length', media: { 'application/octet-stream': bytes } } },
    errors: { 401: 'no device id, or a token that is not the device’s', 404: 'no such blob, or no file-push of it running on the device' },
  },
];
