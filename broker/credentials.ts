/** @module Credentials on upgrade requests: bearer tokens, and the device an agent proves to be. */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { bearerToken } from '../shared/bearer';
import { AGENT_HEADERS } from '../shared/control-channel';
import type { Logger } from '../shared/log';
import { rejectUpgrade } from './reject';

/** The token of an `Authorization: Bearer` header, if there is one. */
export const bearerOf = (req: IncomingMessage): string | undefined => bearerToken(req.headers.authorization);

/** Checks an agent's token: at once on a single server, over the cluster bus on an edge node (which may fail). */
export type AgentAuthenticator = (deviceId: string, token: string) => boolean | Promise<boolean>;

/** What a refused upgrade says when the node cannot check credentials right now (cluster bus away). */
export const UNAVAILABLE_MESSAGE = 'this node cannot check credentials right now (its cluster bus is away); retry shortly or use another server';

/**
 * The device id an agent's upgrade claims, when its agent token proves it; `claimed` is what it
 * said (for logs), whether or not it was proven.
 */
export async function agentDevice(req: IncomingMessage, authenticate: AgentAuthenticator): Promise<{ device?: string; claimed?: string }> {
  const header = req.headers[AGENT_HEADERS.deviceId];
  const claimed = typeof header === 'string' ? header : undefined;
  const token = bearerOf(req);
  return claimed && token && (await authenticate(claimed, token)) ? { device: claimed, claimed } : { claimed };
}

/**
 * `agentDevice`, for an upgrade under way: undefined when the answer is no longer needed (the
 * socket went away while the proof was checked) or could not be had (refused 503 here).
 */
export async function checkedAgent(
  req: IncomingMessage,
  authenticate: AgentAuthenticator,
  socket: Duplex,
  log: Logger,
): Promise<{ device?: string; claimed?: string } | undefined> {
  let proof: { device?: string; claimed?: string };
  try {
    proof = await agentDevice(req, authenticate);
  } catch (err) {
    log.warn('could not check an agent token', { err: (err as Error).message });
    if (!socket.destroyed) rejectUpgrade(socket, 503, 'unavailable', UNAVAILABLE_MESSAGE);
    return undefined;
  }
  return socket.destroyed ? undefined : proof;
}
