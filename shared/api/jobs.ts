/**
 * @module Jobs (CONTRACT 10.2; docs/jobs.md): one operation (`diagnostics`, `command`,
 * `file-push`) across many devices, started at a controlled pace, stopped early by an abort rule,
 * with every device's result as an execution. `POST /v1/jobs`, `GET /v1/jobs[/{id}]`,
 * `POST /v1/jobs/{id}/cancel`, `GET /v1/jobs/{id}/executions` and `POST /v1/blobs` take and
 * answer these; the CLI and the console read them from here too.
 */
import { z } from 'zod';
import { named, pagingParams, timestamp } from './common';
import type { ErrorCode } from './errors';
import { DIAGNOSTIC_OP_NAMES } from '../protocol/diagnostics';
import { OP_TIMEOUT_SECONDS } from '../protocol/jobs';

export const JOB_KINDS = ['diagnostics', 'command', 'file-push'] as const;
export type JobKind = (typeof JOB_KINDS)[number];

export const JOB_STATUSES = ['in_progress', 'completed', 'canceled', 'aborted'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const EXECUTION_STATUSES = ['queued', 'in_progress', 'succeeded', 'failed', 'timed_out', 'canceled'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
/** The statuses an execution ends in. */
export const EXECUTION_ENDS = ['succeeded', 'failed', 'timed_out', 'canceled'] as const satisfies readonly ExecutionStatus[];

/** The role each kind needs at least, as the protocol it resembles (diagnostics, shell, file-transfer). */
export const JOB_KIND_ROLE = { diagnostics: 'developer', command: 'platform-engineer', 'file-push': 'administrator' } as const;

/** Defaults and bounds (CONTRACT 10.2). */
export const JOB_LIMITS = {
  maxDevices: 10_000,
  maxArgv: 64,
  maxArgBytes: 4096,
  timeoutSeconds: { min: 1, max: 3600, default: 300 },
  maxPerMinute: { min: 1, max: 1000, default: 60 },
  maxInFlight: { min: 1, max: 1000, default: 10 },
  abortFailurePct: { min: 1, max: 100 },
  abortMinExecuted: { min: 1, max: 10_000, default: 10 },
  expiresInSeconds: { min: 60, max: 604_800, default: 86_400 },
  /** How long after its start a diagnostics or file-push execution may run before it ends `timed_out`. */
  opTimeoutSeconds: OP_TIMEOUT_SECONDS,
  /** Added to an execution's own timeout before the server gives up on its report (`timed_out`). */
  deadlineMarginSeconds: 30,
  /** The most of stdout+stderr an execution keeps: its last bytes. */
  outputTailBytes: 4096,
  /** A blob's largest size (`POST /v1/blobs`). */
  maxBlobBytes: 256 * 1024 * 1024,
} as const;

/** The codes these operations answer with besides those every operation may. */
export const JOB_ERRORS = [
  'forbidden',
  'not_found',
  'conflict',
  'unprocessable_entity',
  'payload_too_large',
  'unsupported_media_type',
] as const satisfies readonly ErrorCode[];

/**
 * Why an execution did not succeed (`error.code`): the agent's (`exit_nonzero`, `not_found`,
 * `checksum_mismatch`, `op_failed`, …) or the server's (`device_offline`: it never came online before
 * the job's expiry; `no_report`: no result within the deadline; `agent_restarted`: the agent
 * restarted while it ran, so its result is lost; `job_canceled`, `job_aborted`).
 */
export const SERVER_EXECUTION_ERRORS = ['device_offline', 'no_report', 'agent_restarted', 'job_canceled', 'job_aborted', 'device_deleted'] as const;

// Requests

const deviceId = z.string().min(1).max(64);
const labelKey = z.string().min(1).max(63);
const labelValue = z.string().max(63);

/**
 * A target that fits none of the forms: the problem of the form it has the keys of (e.g. `device_ids:
 * must have at most 10000 items`), else the forms there are (zod's own "is not any of the accepted
 * forms" names neither).
 */
function targetError(iss: z.core.$ZodRawIssue): string | undefined {
  if (iss.code !== 'invalid_union') return undefined;
  // The form whose keys the target has: the one that names none of them unknown.
  const given = iss.input !== null && typeof iss.input === 'object' ? Object.keys(iss.input).length : 0;
  const keyed = given > 0 ? iss.errors.find((issues) => issues.length > 0 && issues.every((i) => i.code !== 'unrecognized_keys')) : undefined;
  const first = keyed?.[0];
  if (first) return `${first.path.join('.')}: ${first.message}`;
  return 'must be exactly one of {"device_ids": [...]}, {"group_id": "grp_…", "tenant": "T"} or {"labels": {"k": "v"}}';
}

export const jobTarget = named(
  'JobTarget',
  z.union(
    [
      z.strictObject({ device_ids: z.array(deviceId).min(1).max(JOB_LIMITS.maxDevices) }),
      z.strictObject({
        group_id: z.string().min(1).max(64),
        tenant: z.string().min(1).max(64).describe('the fleet tenant the group belongs to; the token needs fleet:read for it'),
      }),
      z.strictObject({ labels: z.record(labelKey, labelValue).refine((l) => Object.keys(l).length > 0, 'must name at least one label') }),
    ],
    { error: targetError },
  ),
);
export type JobTarget = z.infer<typeof jobTarget>;

const rate = {
  max_per_minute: z
    .number()
    .int()
    .min(JOB_LIMITS.maxPerMinute.min)
    .max(JOB_LIMITS.maxPerMinute.max)
    .nullable()
    .optional()
    .describe('executions started per minute, at an even pace (default 60); null: no pace, only max_in_flight'),
  max_in_flight: z.number().int().min(JOB_LIMITS.maxInFlight.min).max(JOB_LIMITS.maxInFlight.max).optional(),
  abort_failure_pct: z.number().int().min(JOB_LIMITS.abortFailurePct.min).max(JOB_LIMITS.abortFailurePct.max).optional(),
  abort_min_executed: z.number().int().min(JOB_LIMITS.abortMinExecuted.min).max(JOB_LIMITS.abortMinExecuted.max).optional(),
  expires_in_seconds: z.number().int().min(JOB_LIMITS.expiresInSeconds.min).max(JOB_LIMITS.expiresInSeconds.max).optional(),
};

/** A path relative to the files root: no `..`, not absolute, no NUL. */
export const relativePath = z
  .string()
  .min(1)
  .max(1024)
  .refine((p) => !p.startsWith('/') && !p.includes('\0') && !p.split('/').includes('..'), 'must be a path inside the files root (relative, without "..")');

/** The most a diagnostics job's `params` take as JSON (an op's params are a path and a count). */
const MAX_PARAMS_BYTES = 4096;

export const createJobBody = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({
      kind: z.literal('diagnostics'),
      target: jobTarget,
      op: z.enum(DIAGNOSTIC_OP_NAMES),
      params: z
        .record(z.string(), z.unknown())
        .refine((p) => new TextEncoder().encode(JSON.stringify(p)).length <= MAX_PARAMS_BYTES, `must be at most ${MAX_PARAMS_BYTES} bytes as JSON`)
        .optional(),
      ...rate,
    }),
    z.strictObject({
      kind: z.literal('command'),
      target: jobTarget,
      argv: z
        .array(
          z
            .string()
            .min(1)
            .max(JOB_LIMITS.maxArgBytes)
            .refine((a) => !a.includes('\0'), 'must not contain a NUL character (no program can receive one)'),
        )
        .min(1)
        .max(JOB_LIMITS.maxArgv),
      timeout_seconds: z.number().int().min(JOB_LIMITS.timeoutSeconds.min).max(JOB_LIMITS.timeoutSeconds.max).optional(),
      ...rate,
    }),
    z.strictObject({
      kind: z.literal('file-push'),
      target: jobTarget,
      blob_id: z.string().regex(/^blob_[a-z0-9]{1,40}$/, 'must be a blob id (blob_…)'),
      path: relativePath,
      mode: z
        .string()
        .regex(/^0?[0-7]{3}$/, 'must be an octal mode such as "0644"')
        .optional(),
      ...rate,
    }),
  ],
  { error: (iss) => (iss.code === 'invalid_union' ? `must be one of ${JOB_KINDS.join(', ')}` : undefined) },
);
export type CreateJobBody = z.infer<typeof createJobBody>;

export const jobsQuery = z.strictObject({ ...pagingParams(200, 50), status: z.enum(JOB_STATUSES).optional() });
export const executionsQuery = z.strictObject({ ...pagingParams(1000, 100), status: z.enum(EXECUTION_STATUSES).optional() });

// Responses

export const jobCounts = named(
  'JobCounts',
  z.strictObject(Object.fromEntries(EXECUTION_STATUSES.map((s) => [s, z.int().min(0)])) as Record<ExecutionStatus, z.ZodInt>),
);
export type JobCounts = z.infer<typeof jobCounts>;

export const job = named(
  'Job',
  z.strictObject({
    job_id: z.string().describe('job_…'),
    kind: z.enum(JOB_KINDS),
    status: z.enum(JOB_STATUSES),
    target: jobTarget,
    /** What runs: `{op, params}`, `{argv, timeout_seconds}` or `{blob_id, path, mode, size, sha256}`. */
    spec: z.record(z.string(), z.unknown()).describe('what runs on each device, as created (defaults filled in)'),
    max_per_minute: z.int().nullable(),
    max_in_flight: z.int(),
    abort_failure_pct: z.int().nullable(),
    abort_min_executed: z.int(),
    expires_in_seconds: z.int(),
    created_by: z.string(),
    created_at: timestamp,
    finished_at: timestamp.nullable(),
    counts: jobCounts,
    abort_reason: z.string().nullable(),
  }),
);
export type Job = z.infer<typeof job>;

export const executionError = z.strictObject({ code: z.string(), message: z.string() });

export const execution = named(
  'JobExecution',
  z.strictObject({
    device_id: z.string(),
    status: z.enum(EXECUTION_STATUSES),
    attempt: z.int().min(0).describe('how many times it was started (0: never)'),
    exit_code: z.int().nullable(),
    output_tail: z.string().nullable().describe('the last 4 KiB of stdout and stderr as they came'),
    result: z.unknown().nullable().describe('a diagnostics execution’s result'),
    error: executionError.nullable(),
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
  }),
);
export type Execution = z.infer<typeof execution>;

export const blob = named(
  'Blob',
  z.strictObject({
    blob_id: z.string(),
    size: z.int().min(0),
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    created_by: z.string(),
    created_at: timestamp,
  }),
);
export type Blob = z.infer<typeof blob>;
