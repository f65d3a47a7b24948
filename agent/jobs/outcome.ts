/**
 * @module What every job kind of the agent (./command-job, ./diagnostics-job, ./file-push) takes
 * and answers: the attempt's context, its outcome (the result message without its address) and
 * the kinds' one error. A kind answers with the outcome and never throws; it ends at once,
 * leaving nothing behind, when its signal aborts.
 */
import type { StagingJournal } from '../../shared/files/tar-extract';
import type { Logger } from '../../shared/log';
import { OP_TIMEOUT_SECONDS, type JobResultMessage, type JobWork } from '../../shared/protocol/jobs';
import type { AgentConfig } from '../config';

/** How an attempt ended: the result message without its address. */
export type JobOutcome = Omit<JobResultMessage, 'type' | 'execution_id' | 'attempt'>;

export interface JobContext {
  config: Readonly<AgentConfig>;
  log: Logger;
  /** Aborted when the attempt is canceled or the agent stops. */
  signal: AbortSignal;
  /** Where the blob `blobId` is fetched: the server this agent's control channel is connected to. */
  blobUrl(blobId: string): string;
  /** Records a file-push's temporary file, so an agent killed meanwhile removes it on restart. */
  journal?: (() => StagingJournal) | undefined;
}

type Work<K extends JobWork['kind']> = Extract<JobWork, { kind: K }>;
export type KindRunner<K extends JobWork['kind']> = (work: Work<K>, ctx: JobContext) => Promise<JobOutcome>;

/** How long a diagnostics op or a file push may take (the server's deadline adds its margin to the same figure). */
export const OP_TIMEOUT_MS = OP_TIMEOUT_SECONDS * 1000;

/** The longest error message a result carries (shared/protocol/jobs.ts). */
const MAX_MESSAGE = 1024;

/**
 * A job kind's own failure (`checksum_mismatch`, `blob_unavailable`, …): a code, as data, and a
 * message for people. File operations throw OpError (the session-stream catalogue) besides it.
 */
export class JobError extends Error {
  override readonly name = 'JobError';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** A failed outcome with `code` and `message` (cut to what the wire takes). */
export function failed(code: string, message: string, extra: Partial<JobOutcome> = {}): JobOutcome {
  return { status: 'failed', ...extra, error: { code: code.slice(0, 64), message: message.slice(0, MAX_MESSAGE) } };
}
