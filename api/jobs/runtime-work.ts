/**
 * @module What the dispatcher sends and keeps of one attempt (docs/jobs.md): the work of a job's
 * spec as `job.run` carries it, an attempt's deadline, and an agent's `job.result` as the
 * execution records it (the last 4 KiB of output, the result as JSON).
 */
import { JOB_LIMITS } from '../../shared/api/jobs';
import type { JobResultMessage, JobWork } from '../../shared/protocol/jobs';
import type { AttemptEnd } from '../store/job-runs';

/** The work a job's stored spec describes; undefined if the spec does not fit its kind (a bug or a hand-edited row). */
export function workOf(kind: string, specText: string): JobWork | undefined {
  let spec: Record<string, unknown>;
  try {
    spec = JSON.parse(specText) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (kind === 'diagnostics' && typeof spec.op === 'string') {
    const params = spec.params as Record<string, unknown> | undefined | null;
    return { kind, op: spec.op as Extract<JobWork, { kind: 'diagnostics' }>['op'], ...(params ? { params } : {}) };
  }
  if (kind === 'command' && Array.isArray(spec.argv)) {
    return { kind, argv: spec.argv as string[], timeout_seconds: Number(spec.timeout_seconds ?? JOB_LIMITS.timeoutSeconds.default) };
  }
  if (kind === 'file-push' && typeof spec.blob_id === 'string' && typeof spec.path === 'string') {
    return {
      kind,
      blob_id: spec.blob_id,
      size: Number(spec.size),
      sha256: String(spec.sha256),
      path: spec.path,
      mode: typeof spec.mode === 'string' ? spec.mode : '0644',
    };
  }
  return undefined;
}

/**
 * How long after its start the server waits for an attempt's result: the command's own timeout
 * (the agent stops it then), or the ops' bound, plus a margin for the report to travel.
 */
export function deadlineMs(work: JobWork, marginSeconds: number): number {
  const own = work.kind === 'command' ? work.timeout_seconds : JOB_LIMITS.opTimeoutSeconds;
  return (own + marginSeconds) * 1000;
}

/** The last `max` bytes of `text` as UTF-8, not starting inside a character. */
export function tailBytes(text: string, max: number = JOB_LIMITS.outputTailBytes): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return text;
  let start = bytes.length - max;
  // A UTF-8 continuation byte (10xxxxxx) is the middle of a character: start after it.
  while (start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start).toString('utf8');
}

/** An agent's report as the execution records it. */
export function attemptEnd(msg: JobResultMessage, at: string): AttemptEnd {
  return {
    status: msg.status,
    exit_code: msg.exit_code ?? null,
    output_tail: msg.output_tail === undefined ? null : tailBytes(msg.output_tail),
    result: msg.result === undefined ? null : JSON.stringify(msg.result),
    error_code: msg.error?.code ?? null,
    error_message: msg.error?.message ?? null,
    finished_at: at,
  };
}
