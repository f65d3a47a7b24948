/**
 * @module Session streams (docs/session-streams.md): the upgrades of a client to a session's
 * stream (its page's origin and its credentials checked: ./stream-origins) and of a device's data
 * WebSocket for it (its proof checked), and the ends of streams the relay decides: the session
 * closed or expired, a token revoked, the device refused, the server stopping. What becomes of an
 * admitted stream, from waiting for the device to the splice, is ./stream-table's.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../shared/log';
import { AGENT_HEADERS, type CloseReason } from '../shared/protocol/control-channel';
import { DEVICE_JOIN_TIMEOUT_MS, STREAM_CLOSE, STREAM_END, TOKEN_END_TEXT, type StreamAccess } from '../shared/protocol/session-stream';
import { AGENT_SUBPROTOCOL } from '../shared/version';
import { bearerOf, checkedAgent, UNAVAILABLE_MESSAGE, type AgentAuthenticator } from './credentials';
import { rejectUpgrade } from './reject';
import { createByteMeter, type ByteCounts } from './byte-meter';
import { acceptHop, type Hop } from './hop';
import { originAllowed, streamOrigins } from './stream-origins';
import { createStreamTable, type StreamRouting } from './stream-table';
import { streamModeOf } from './stream-mode';
import { createExpiryNotices } from './expiry-notices';

export { SPLICE_HIGH_WATER } from './stream-table';

/** Frames of a data stream; tar chunks and terminal bytes are far smaller. */
export const STREAM_MAX_PAYLOAD = 4 * 1024 * 1024;

export interface StreamDeps extends StreamRouting {
  log: Logger;
  /** Decides whether these credentials may connect to the session's stream; rejects when that cannot be known now. */
  authorize(sessionId: string, credentials: { ticket?: string; bearer?: string }): StreamAccess | Promise<StreamAccess>;
  authenticateAgent: AgentAuthenticator;
  /** Adds byte counts to session records; called at least every second and when a stream ends. */
  recordBytes(counts: Map<string, ByteCounts>): void | Promise<void>;
  joinTimeoutMs?: number;
  /** Wall clock (ms), to compare with token expiry times. */
  now?: () => number;
  /** Browser origins besides the server's own that may open session streams. */
  allowedOrigins?: readonly string[] | undefined;
  /** The URL this node is reached at (its public URL): pages of its origin may open session streams. */
  publicUrl?: string | undefined;
  /** Seconds before a session's end at which its stream's client gets a notice (TETHER_SESSION_WARNINGS); none: no notices. */
  warningsS?: readonly number[] | undefined;
}

export function createStreams(deps: StreamDeps) {
  const { log } = deps;
  const origins = streamOrigins(deps.publicUrl, deps.allowedOrigins ?? []);
  /** Every stream socket still open, clients' and devices', to close on shutdown. */
  const hops = new Set<Hop>();
  const meter = createByteMeter({ log, recordBytes: deps.recordBytes });
  const now = deps.now ?? Date.now;
  const notices = deps.warningsS?.length ? createExpiryNotices({ offsetsS: deps.warningsS, now, log }) : undefined;
  const table = createStreamTable({ log, routing: deps, meter, joinTimeoutMs: deps.joinTimeoutMs ?? DEVICE_JOIN_TIMEOUT_MS, now, notices });

  /** Completes an upgrade on a stream path, for the frame-forwarding splice; undefined when refused. */
  function accept(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    onSocketError: (err: Error) => void,
    chooseProtocol?: (offered: string[]) => string | undefined,
  ): Hop | undefined {
    const hop = acceptHop(req, socket, head, { maxPayload: STREAM_MAX_PAYLOAD, onSocketError, chooseProtocol });
    if (!hop) return undefined;
    hops.add(hop);
    void hop.done.then(() => hops.delete(hop));
    return hop;
  }

  return {
    /** A client's upgrade to `/v1/remote-access/sessions/{id}/stream`. */
    async handleClientUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, sessionId: string): Promise<void> {
      // A page of another site must not drive a session with a ticket it got hold of (CSWSH).
      const origin = req.headers.origin;
      if (origin !== undefined && !originAllowed(origin, origins)) {
        log.warn('refused a session stream from another origin', { session_id: sessionId, origin: origin.slice(0, 200) });
        rejectUpgrade(socket, 403, 'forbidden', 'this origin may not open session streams (TETHER_CONSOLE_ORIGINS)');
        return;
      }
      const url = new URL(req.url ?? '/', 'http://x');
      const ticket = url.searchParams.get('ticket') ?? undefined;
      const bearer = bearerOf(req);
      let access: StreamAccess;
      try {
        access = await deps.authorize(sessionId, { ticket, bearer });
      } catch (err) {
        log.warn('could not check stream credentials', { session_id: sessionId, err: (err as Error).message });
        if (!socket.destroyed) rejectUpgrade(socket, 503, 'unavailable', UNAVAILABLE_MESSAGE);
        return;
      }
      if (socket.destroyed) return;
      const onError = (err: Error) => log.info('client stream error', { session_id: sessionId, err: err.message });
      // Like ws, the first subprotocol a client offers is taken (the stream has none of its own).
      const ws = accept(req, socket, head, onError, (offered) => offered[0]);
      if (!ws) return;
      if (!access.ok) return ws.close(access.code, access.reason);
      const mode = streamModeOf(url.searchParams, access.grant.protocol);
      if (!mode.ok) return ws.close(STREAM_CLOSE.protocolViolation, mode.reason);
      table.admit(ws, access.grant, mode.mode);
    },

    /** A device's data WebSocket for a stream it was asked to serve. */
    async handleAgentUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
      const proof = await checkedAgent(req, deps.authenticateAgent, socket, log, true);
      if (!proof) return;
      const deviceId = proof.device;
      if (!deviceId) {
        rejectUpgrade(socket, 401, 'unauthorized', 'unknown device or wrong agent token');
        return;
      }
      const streamId = req.headers[AGENT_HEADERS.streamId];
      const stream = table.waiting(typeof streamId === 'string' ? streamId : undefined, deviceId);
      if (!stream) {
        rejectUpgrade(socket, 404, 'not_found', 'no stream is waiting for this device with that id');
        return;
      }
      const onError = (err: Error) => log.warn('device stream error', { session_id: stream.grant.sessionId, stream_id: stream.streamId, err: err.message });
      const offersAgentProtocol = (offered: string[]) => (offered.includes(AGENT_SUBPROTOCOL) ? AGENT_SUBPROTOCOL : undefined);
      const ws = accept(req, socket, head, onError, offersAgentProtocol);
      if (ws) table.join(ws, stream);
    },

    /** The agent will not serve a stream: the client learns why. False: no such stream waits here. */
    refused(deviceId: string, streamId: string, message: string): boolean {
      const stream = table.waiting(streamId, deviceId);
      if (!stream) return false;
      table.release(stream);
      stream.client.close(STREAM_CLOSE.internalError, `device refused: ${message}`);
      return true;
    },

    /** The session closed or expired: both sides close with its code, counts are written. */
    endSession(sessionId: string, reason: CloseReason): void {
      const stream = table.ofSession(sessionId);
      if (!stream) return;
      // The session closed because the very token this client joined with expired: 4401, as
      // its own timer would have said a moment later.
      if (reason === 'token_expired' && table.tokenExpired(stream)) return table.end(stream, STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.expired);
      table.end(stream, STREAM_END[reason].code, STREAM_END[reason].text);
    },

    /** A session's end moved (an extend): its stream's client is warned before the new one. */
    extended: (sessionId: string, expiresAt: string): void => table.extended(sessionId, expiresAt),

    /** A token was revoked: the streams it admitted close with 4401 (ticket holders are the session's business). */
    endToken(tokenId: string): void {
      for (const stream of table.all()) {
        if (stream.grant.tokenId !== tokenId) continue;
        log.info('closing a stream: its token was revoked', { session_id: stream.grant.sessionId, stream_id: stream.streamId });
        table.end(stream, STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.revoked);
      }
    },

    /** Resolves once every byte count handed over so far is written. */
    countsWritten: () => meter.settled(),

    /** Open streams (for metrics and tests). */
    get size(): number {
      return table.size;
    },

    /** Closes every stream (1001) and writes the last counts. */
    async close(): Promise<void> {
      for (const stream of table.all()) table.end(stream, STREAM_CLOSE.serverShutdown, 'server shutting down');
      notices?.close();
      meter.close();
      await meter.settled();
      const open = [...hops];
      await Promise.race([Promise.all(open.map((hop) => hop.done)), new Promise<void>((r) => setTimeout(r, 2000).unref())]);
      for (const hop of open) hop.terminate();
      await Promise.all(open.map((hop) => hop.done));
    },
  };
}
export type Streams = ReturnType<typeof createStreams>;
