/** @module Credentials on upgrade requests: bearer tokens, and the device an agent proves to be. */
import type { IncomingMessage } from 'node:http';
import { bearerToken } from '../shared/bearer';
import { AGENT_HEADERS } from '../shared/control-channel';

/** The token of an `Authorization: Bearer` header, if there is one. */
export const bearerOf = (req: IncomingMessage): string | undefined => bearerToken(req.headers.authorization);

/**
 * The device id an agent's upgrade claims, when its agent token proves it; `claimed` is what it
 * said (for logs), whether or not it was proven.
 */
export function agentDevice(
  req: IncomingMessage,
  authenticate: (deviceId: string, token: string) => boolean,
): { device?: string; claimed?: string } {
  const header = req.headers[AGENT_HEADERS.deviceId];
  const claimed = typeof header === 'string' ? header : undefined;
  const token = bearerOf(req);
  return claimed && token && authenticate(claimed, token) ? { device: claimed, claimed } : { claimed };
}
