/**
 * @module Fetches a file-push job's blob from the server the agent's control channel is connected
 * to: `GET {server}/v1/agent/blobs/{blob_id}` with the device's token and id (the headers of the
 * control channel), which the server answers only while this device runs a file-push of that
 * blob. TLS as the agent's WebSocket dials it (Node's defaults: the certificate checked against
 * the system's CAs and NODE_EXTRA_CA_CERTS), loaded only for https. The body is handed on as a
 * stream, read with backpressure: nothing of it is held in memory.
 */
import type { IncomingMessage } from 'node:http';
import { AGENT_CONNECT_PATH, AGENT_HEADERS } from '../../shared/protocol/control-channel';
import { TETHER_VERSION } from '../../shared/version';
import type { AgentServer } from '../config';
import { JobError } from './outcome';

/** The agent fetches blobs here, below the server's base URL. */
export const AGENT_BLOBS_PATH = '/v1/agent/blobs';

/** A socket silent this long (no answer, or a body that stalls) ends the fetch. */
const IDLE_TIMEOUT_MS = 30_000;

/** The http(s) URL of blob `blobId` on `server` (its control channel URL with the path prefix it has). */
export function blobUrlOn(server: AgentServer, blobId: string): string {
  const url = new URL(server.connectUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  const prefix = url.pathname.endsWith(AGENT_CONNECT_PATH) ? url.pathname.slice(0, -AGENT_CONNECT_PATH.length) : '';
  url.pathname = `${prefix}${AGENT_BLOBS_PATH}/${encodeURIComponent(blobId)}`;
  return url.toString();
}

export interface BlobRequest {
  url: string;
  deviceId: string;
  token: string;
  signal: AbortSignal;
}

/**
 * Resolves with the body of a 200 answer (read it to its end or destroy it); rejects with a
 * JobError `blob_unavailable` for any other answer or a connection that fails, or with the abort.
 */
export async function fetchBlob(req: BlobRequest): Promise<IncomingMessage> {
  const client = req.url.startsWith('https:') ? await import('node:https') : await import('node:http');
  return new Promise<IncomingMessage>((resolve, reject) => {
    const request = client.get(req.url, {
      headers: {
        authorization: `Bearer ${req.token}`,
        [AGENT_HEADERS.deviceId]: req.deviceId,
        [AGENT_HEADERS.agentVersion]: TETHER_VERSION,
        accept: 'application/octet-stream',
      },
      signal: req.signal,
      timeout: IDLE_TIMEOUT_MS,
    });
    request.on('timeout', () => request.destroy(new JobError('blob_unavailable', `the server sent nothing for ${IDLE_TIMEOUT_MS / 1000} s`)));
    request.on('error', (err) =>
      reject(err instanceof JobError || req.signal.aborted ? err : new JobError('blob_unavailable', `cannot fetch the blob: ${err.message}`)),
    );
    request.on('response', (res) => {
      res.on('error', () => {}); // read by the caller, whose loop sees the error; a stream never lacks a listener
      if (res.statusCode === 200) return resolve(res);
      res.resume(); // the refusal's body is of no use; let the socket go
      const why = res.statusCode === 404 ? 'the server has no such blob for this device (404)' : `the server answered ${res.statusCode}`;
      reject(new JobError('blob_unavailable', why));
    });
  });
}
