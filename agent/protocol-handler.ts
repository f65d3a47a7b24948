/**
 * @module What every protocol handler of the agent receives (its data stream and a context) and
 * promises. One handler per session protocol: `shell/`, `diagnostics/`, `file-transfer/`,
 * `port-forward/`.
 */
import type { Logger } from '../shared/log';
import type { StagingJournal } from '../shared/files/tar-extract';
import type { AgentConfig } from './config';
import type { DataStream } from './data-stream';
import type { ShellPool } from './shell/shell-pool';

export interface HandlerContext {
  sessionId: string;
  /** A port-forward session's targets (`HOST:PORT`, canonical); empty for the other protocols. */
  targets: readonly string[];
  log: Logger;
  config: Readonly<AgentConfig>;
  /**
   * Pre-started login shells, when the agent keeps them: made with `create` on first use (the
   * shell handler brings it, so that node-pty loads with the first shell session, not before).
   */
  shells?: ((create: (log: Logger) => ShellPool) => ShellPool | undefined) | undefined;
  /** A journal for one upload, so a killed agent cleans up after it on the next start. */
  uploadJournal?: (() => StagingJournal) | undefined;
}

export interface Handler {
  /**
   * Ends the handler: kills what it started, aborts transfers and removes their partial files.
   * Idempotent; resolves once everything is gone, within a few seconds (a closed session ends
   * every process of its terminal within 5 s: docs/session-streams.md, what the device guarantees).
   */
  stop(reason: string): Promise<void>;
}

/** Starts a protocol's handler on a freshly opened data stream. */
export type HandlerFactory = (stream: DataStream, ctx: HandlerContext) => Handler;
