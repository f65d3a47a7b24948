/**
 * @module What stands in for an agent's token where the token itself must not travel: keyed
 * hashes (HMAC-SHA256) whose key is the SHA-256 of the agent token, which is what the database
 * stores. The agent and the node with the database can compute them; nobody who only sees one can
 * use it anywhere else, since each is bound to its purpose, its node or stream, and its device.
 *
 * - a **node proof** says to the control node that a cluster node holds the device's agent (it saw
 *   the token); it is bound to that node, and other nodes cannot present it (NATS subject
 *   permissions say who sent a message);
 * - a **stream proof** is what the agent shows when it dials a data stream, instead of its token:
 *   bound to that one stream id, useless once the stream is joined;
 * - a **stream-open signature** is how the control node vouches for a `stream.open` that sends the
 *   agent to dial another node: the agent checks it before it dials a URL that is not one of its
 *   own servers.
 */
import { createHmac } from 'node:crypto';
import { safeEqual, sha256Hex } from '../ids';

/** The key of every proof: the SHA-256 (hex) of the agent token, as the database stores it. */
export const agentKey = (token: string): string => sha256Hex(token);

const mac = (key: string, text: string): string => createHmac('sha256', key).update(text).digest('base64url');

/** A proof, by the node `node`, that it holds the agent of `deviceId`. */
export const nodeAgentProof = (key: string, node: string, deviceId: string): string => mac(key, `tether-node-agent\n${node}\n${deviceId}`);

/** The proof an agent shows when it dials the data stream `streamId`. */
export const streamProof = (key: string, streamId: string): string => mac(key, `tether-stream-join\n${streamId}`);

/** The fields of a `stream.open` that its signature covers. */
export interface SignedStreamOpen {
  device_id: string;
  session_id: string;
  stream_id: string;
  protocol: string;
  expires_at: string;
  targets?: readonly string[] | undefined;
  url?: string | undefined;
}

/** The control node's signature of a `stream.open` for the agent of `device_id`. */
export function streamOpenSignature(key: string, m: SignedStreamOpen): string {
  const fields = [m.device_id, m.session_id, m.stream_id, m.protocol, m.expires_at, m.targets ?? null, m.url ?? null];
  return mac(key, `tether-stream-open\n${JSON.stringify(fields)}`);
}

/** Whether `proof` is `expected`, in constant time. */
export const proofMatches = (expected: string, proof: string): boolean => safeEqual(expected, proof);

/**
 * What an agent shows a node: its token (on its control channel, to the node it chose), or a
 * stream proof (on a data stream, to whichever node the stream is at).
 */
export type AgentCredential = { token: string } | { streamId: string; proof: string };
