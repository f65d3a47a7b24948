/**
 * @module The job messages of the agent control channel (CONTRACT 10.2; docs/jobs.md, the agent's
 * side). The relay hands an agent one attempt of an execution (`job.run`); the agent answers with
 * its result (`job.result`) once, keeps it until the relay acknowledges it (`job.ack`) and sends
 * it again after a reconnect, so a result reached while the connection was down is not lost and
 * the server records each attempt once. Right after the `welcome`, an agent that knows jobs says
 * which attempts it is still running (`jobs.running`); the relay starts no job on an agent before
 * that report, and an attempt the server believes running that the report does not name (and that
 * has no result waiting) ended with the agent's restart.
 */
import * as z from 'zod/mini';
import { DIAGNOSTIC_OP_NAMES } from './diagnostics';

/** One attempt of one execution: `execution_id` (`exe_…`) and its attempt number (1, 2, …). */
const attemptRef = {
  execution_id: z.string().check(z.minLength(1), z.maxLength(64)),
  attempt: z.int().check(z.gte(1)),
};

/** How long a `diagnostics` or `file-push` attempt may run on the device before it ends `timed_out` (a command has its own `timeout_seconds`). */
export const OP_TIMEOUT_SECONDS = 300;

/** The last bytes of stdout+stderr an agent reports (and the server keeps). */
export const OUTPUT_TAIL_BYTES = 4096;
/**
 * The most bytes a `job.result` takes as JSON: the relay takes control frames of up to 64 KiB and
 * closes a connection that sends a bigger one, so an agent sends a result that would not fit as a
 * failure (`result_too_large`) instead (else it would resend it after every reconnect, for ever).
 */
export const MAX_JOB_RESULT_BYTES = 60 * 1024;
/** The most attempts `jobs.running` names (an agent runs at most this many at once). */
export const MAX_RUNNING_JOBS = 64;

/** What one attempt runs, by kind. */
export const jobWork = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('diagnostics'), op: z.enum(DIAGNOSTIC_OP_NAMES), params: z.optional(z.record(z.string(), z.unknown())) }),
  z.object({
    kind: z.literal('command'),
    argv: z.array(z.string().check(z.maxLength(4096))).check(z.minLength(1), z.maxLength(64)),
    timeout_seconds: z.int().check(z.gte(1), z.lte(3600)),
  }),
  z.object({
    kind: z.literal('file-push'),
    /** Fetched with the agent's own token from `GET {server}/v1/agent/blobs/{blob_id}` (AGENT_HEADERS), checked against `sha256` and `size`. */
    blob_id: z.string().check(z.maxLength(64)),
    size: z.int().check(z.gte(0)),
    sha256: z.string().check(z.regex(/^[0-9a-f]{64}$/)),
    /** Relative to the files root; written to a temporary file beside it, then renamed over it. */
    path: z.string().check(z.minLength(1), z.maxLength(1024)),
    /** Octal, e.g. `"0644"`. */
    mode: z.string().check(z.regex(/^0?[0-7]{3}$/)),
  }),
]);
export type JobWork = z.infer<typeof jobWork>;

/** Relay → agent: run this attempt. A second `job.run` of an attempt the agent runs or has reported is ignored (its result is sent again if it waits). */
export const jobRunMessage = z.object({ type: z.literal('job.run'), ...attemptRef, work: jobWork });

/** Relay → agent: the server recorded this attempt's result; forget it. */
export const jobAckMessage = z.object({ type: z.literal('job.ack'), ...attemptRef });

/** Relay → agent: stop this attempt (its job was canceled or aborted, or the server gave up on it); no result is expected. */
export const jobCancelMessage = z.object({ type: z.literal('job.cancel'), ...attemptRef });

/**
 * Agent → relay, right after the welcome: the attempts it is running or holds an unacknowledged
 * result of (those results follow at once as `job.result`).
 */
export const jobsRunningMessage = z.object({
  type: z.literal('jobs.running'),
  running: z.array(z.object(attemptRef)).check(z.maxLength(MAX_RUNNING_JOBS)),
});

/** How an attempt ended on the device. */
export const JOB_RESULT_STATUSES = ['succeeded', 'failed', 'timed_out'] as const;

/** Agent → relay: how an attempt ended; sent until acknowledged. */
export const jobResultMessage = z.object({
  type: z.literal('job.result'),
  ...attemptRef,
  status: z.enum(JOB_RESULT_STATUSES),
  /** `command`: the exit code (null when a signal ended it). */
  exit_code: z.optional(z.nullable(z.int())),
  /** `command`: the last OUTPUT_TAIL_BYTES of stdout and stderr as they came (UTF-8, lossy). */
  output_tail: z.optional(z.string().check(z.maxLength(OUTPUT_TAIL_BYTES * 4))),
  /** `diagnostics`: the op's result. */
  result: z.optional(z.unknown()),
  /** Why it did not succeed: a code (the session-stream catalogue's, or `exit_nonzero`, `checksum_mismatch`, `blob_unavailable`, `timeout`, `result_too_large`) and a message. */
  error: z.optional(z.object({ code: z.string().check(z.maxLength(64)), message: z.string().check(z.maxLength(1024)) })),
});
export type JobResultMessage = z.infer<typeof jobResultMessage>;
export type JobRunMessage = z.infer<typeof jobRunMessage>;
export type JobsRunningMessage = z.infer<typeof jobsRunningMessage>;
