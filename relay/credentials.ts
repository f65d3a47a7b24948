/** @module Credentials on upgrade requests: bearer tokens, and the device an agent proves to be. */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { bearerToken } from '../shared/auth/bearer';
import type { AgentCredential } from '../shared/auth/agent-proofs';
import { AGENT_HEADERS } from '../shared/protocol/control-channel';
import type { Logger } from '../shared/log';
import { rejectUpgrade } from './reject';

/** The token of an `Authorization: Bearer` header, if there is one. */
export const bearerOf = (req: IncomingMessage): string | undefined => bearerToken(req.headers.authorization);

/**
 * Checks what an agent shows (its token, or on a data stream a proof bound to the stream): at once
 * on a single server, over the cluster bus on an edge node (which may fail).
 */
export type AgentAuthenticator = (deviceId: string, credential: AgentCredential) => boolean | Promise<boolean>;

/** What a refused upgrade says when the node cannot check credentials right now (cluster bus away). */
export const UNAVAILABLE_MESSAGE = 'this node cannot check credentials right now (its cluster bus is away); retry shortly or use another server';

/**
 * What an agent's upgrade shows: on a data stream (`stream`) its stream proof, or its token (agents
 * before the proof sent their token there too); on the control channel, its token only.
 */
function credentialOf(req: IncomingMessage, stream: boolean): AgentCredential | undefined {
  const proof = req.headers[AGENT_HEADERS.streamProof];
  const streamId = req.headers[AGENT_HEADERS.streamId];
  if (stream && typeof proof === 'string' && typeof streamId === 'string') return { streamId, proof };
  const token = bearerOf(req);
  return token === undefined ? undefined : { token };
}

/**
 * The device id an agent's upgrade claims, when its credential proves it; `claimed` is what it
 * said (for logs), whether or not it was proven.
 */
export async function agentDevice(req: IncomingMessage, authenticate: AgentAuthenticator, stream = false): Promise<{ device?: string; claimed?: string }> {
  const header = req.headers[AGENT_HEADERS.deviceId];
  const claimed = typeof header === 'string' ? header : undefined;
  const credential = credentialOf(req, stream);
  return claimed && credential && (await authenticate(claimed, credential)) ? { device: claimed, claimed } : { claimed };
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
  stream = false,
): Promise<{ device?: string; claimed?: string } | undefined> {
  let proof: { device?: string; claimed?: string };
  try {
    proof = await agentDevice(req, authenticate, stream);
  } catch (err) {
    log.warn('could not check an agent token', { err: (err as Error).message });
    if (!socket.destroyed) rejectUpgrade(socket, 503, 'unavailable', UNAVAILABLE_MESSAGE);
    return undefined;
  }
  return socket.destroyed ? undefined : proof;
}
