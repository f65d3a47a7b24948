/** @module What every protocol handler of the agent receives and promises. */
import type { Logger } from '../../shared/log';
import type { Channel } from '../channel';
import type { AgentConfig } from '../config';
import type { StagingJournal } from '../../shared/tar-extract';
import type { ShellPool } from './shell-pool';

export interface HandlerContext {
  sessionId: string;
  log: Logger;
  config: Readonly<AgentConfig>;
  /** Pre-started login shells, when the agent keeps them (started on first use). */
  shells?: (() => ShellPool | undefined) | undefined;
  /** A journal for one upload, so a killed agent cleans up after it on the next start. */
  uploadJournal?: (() => StagingJournal) | undefined;
}

export interface Handler {
  /**
   * Ends the handler: kills what it started, aborts transfers and removes their partial files.
   * Idempotent; resolves once everything is gone (well within the contract's 5 seconds).
   */
  stop(reason: string): Promise<void>;
}

export type HandlerFactory = (channel: Channel, ctx: HandlerContext) => Handler;
