/** @module What every protocol handler of the agent receives and promises. */
import type { Logger } from '../../shared/log';
import type { Channel } from '../channel';
import type { AgentConfig } from '../config';

export interface HandlerContext {
  sessionId: string;
  log: Logger;
  config: Readonly<AgentConfig>;
}

export interface Handler {
  /**
   * Ends the handler: kills what it started, aborts transfers and removes their partial files.
   * Idempotent; resolves once everything is gone (well within the contract's 5 seconds).
   */
  stop(reason: string): Promise<void>;
}

export type HandlerFactory = (channel: Channel, ctx: HandlerContext) => Handler;
