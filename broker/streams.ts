/**
 * @module Session streams (docs/session-streams.md): admits a client to a session's stream, asks
 * the device to dial a data WebSocket for it, splices the two (bytes counted by `./byte-meter`),
 * and ends both sides with the documented close codes when the session closes or expires.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomBase32 } from '../shared/ids';
import type { Logger } from '../shared/log';
import { AGENT_HEADERS, type BrokerToAgentMessage, type CloseReason } from '../shared/control-channel';

type StreamOpenMessage = Extract<BrokerToAgentMessage, { type: 'stream.open' }>;
import { DEVICE_JOIN_TIMEOUT_MS, STREAM_CLOSE, STREAM_END, TOKEN_END_TEXT, type StreamAccess, type StreamGrant } from '../shared/session-stream';
import { AGENT_SUBPROTOCOL } from '../shared/version';
import { bearerOf, checkedAgent, UNAVAILABLE_MESSAGE, type AgentAuthenticator } from './credentials';
import { rejectUpgrade } from './reject';
import { sendableCode } from '../shared/ws-close';
import { createByteMeter, type ByteCounts } from './byte-meter';
import { acceptHop, type Hop } from './hop';
import { splice, type Splice } from './splice';
import type { RecordingPort, StreamRecording } from '../shared/recording';

/** Frames of a data stream; tar chunks and terminal bytes are far smaller. */
export const STREAM_MAX_PAYLOAD = 4 * 1024 * 1024;
/** Per direction, bytes accepted but not yet written before the source is paused. */
export const SPLICE_HIGH_WATER = 4 * 1024 * 1024;
const AGENT_RETRY_MS = 250;

export interface StreamDeps {
  log: Logger;
  /** Decides whether these credentials may connect to the session's stream; rejects when that cannot be known now. */
  authorize(sessionId: string, credentials: { ticket?: string; bearer?: string }): StreamAccess | Promise<StreamAccess>;
  authenticateAgent: AgentAuthenticator;
  sendToAgent(deviceId: string, msg: StreamOpenMessage): boolean;
  /**
   * Asks the device's agent to open a stream when it is not connected here (another cluster
   * node holds it); true when it was asked. None: only agents connected here are asked.
   */
  routeStream?(deviceId: string, msg: StreamOpenMessage): Promise<boolean>;
  /** Adds byte counts to session records; called at least every second and when a stream ends. */
  recordBytes(counts: Map<string, ByteCounts>): void;
  /** Every forwarded frame, for the metrics. */
  onBytes(direction: 'to_device' | 'from_device', bytes: number): void;
  joinTimeoutMs?: number;
  /** Wall clock (ms), to compare with token expiry times. */
  now?: () => number;
  /** Records streams (shell sessions) as they pass; none: nothing is recorded. */
  recordings?: RecordingPort | undefined;
  /** Browser origins besides the server's own that may open session streams. */
  allowedOrigins?: readonly string[] | undefined;
  /** The URL this node is reached at (its public URL): pages of its origin may open session streams. */
  publicUrl?: string | undefined;
  /** Told when a client is admitted to a session's stream and when that stream is released (a session nobody uses closes). */
  streamClients?: { attached(sessionId: string): void; detached(sessionId: string): void } | undefined;
}

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const isLoopback = (hostname: string): boolean => LOOPBACK_NAMES.includes(hostname) || /^127(\.\d{1,3}){3}$/.test(hostname);

/**
 * The browser origins whose pages may open session streams: the public URL's own and the ones
 * the operator named. Never the request's own Host: a DNS-rebinding page (evil.example resolved
 * to this server) sends a Host that matches its Origin. A loopback host has several names, so on
 * one every loopback name with the same scheme and port is the same origin (the console at
 * http://localhost:8080 of a server on 127.0.0.1:8080): only pages on this machine can have them.
 */
export function streamOrigins(publicUrl: string | undefined, allowed: readonly string[]): ReadonlySet<string> {
  const origins = new Set(allowed);
  if (publicUrl === undefined || !URL.canParse(publicUrl)) return origins;
  const url = new URL(publicUrl);
  origins.add(url.origin);
  const port = url.port === '' ? '' : `:${url.port}`;
  if (isLoopback(url.hostname)) for (const name of LOOPBACK_NAMES) origins.add(`${url.protocol}//${name}${port}`);
  return origins;
}

/** A browser's `Origin` may open a stream only when it is one of `origins`, exactly as browsers serialise it (RFC 6454 §6.1). */
function originAllowed(origin: string, origins: ReadonlySet<string>): boolean {
  return origins.has(origin);
}

interface Stream {
  streamId: string;
  grant: StreamGrant;
  client: Hop;
  agent?: Hop;
  splice?: Splice;
  joinTimer?: NodeJS.Timeout;
  retryTimer?: NodeJS.Timeout;
  /** Ends a stream joined with a bearer token when that token expires. */
  tokenTimer?: NodeJS.Timeout;
  recording?: StreamRecording | undefined;
}

// setTimeout's ceiling (about 24.8 days); a later expiry re-arms when it fires.
const MAX_TIMER_MS = 2 ** 31 - 1;

export function createStreams(deps: StreamDeps) {
  const { log } = deps;
  const joinTimeoutMs = deps.joinTimeoutMs ?? DEVICE_JOIN_TIMEOUT_MS;
  const now = deps.now ?? Date.now;
  const origins = streamOrigins(deps.publicUrl, deps.allowedOrigins ?? []);
  /** Every stream socket still open, clients' and devices', to close on shutdown. */
  const hops = new Set<Hop>();
  const bySession = new Map<string, Stream>();
  const byStreamId = new Map<string, Stream>();
  const meter = createByteMeter({ log, recordBytes: deps.recordBytes });

  /** Forgets a stream; its byte counts are written at once. */
  function release(stream: Stream): void {
    clearTimeout(stream.joinTimer);
    clearTimeout(stream.retryTimer);
    clearTimeout(stream.tokenTimer);
    if (bySession.get(stream.grant.sessionId) === stream) bySession.delete(stream.grant.sessionId);
    // Released more than once (an end, then the close it causes): the client left once.
    if (byStreamId.delete(stream.streamId)) deps.streamClients?.detached(stream.grant.sessionId);
    meter.flush(stream.grant.sessionId);
    stream.recording?.end();
    stream.recording = undefined;
  }

  /** Ends a stream from the broker's side: counts written, both sides closed with `code`. */
  function endStream(stream: Stream, code: number, text: string): void {
    release(stream);
    if (stream.splice) stream.splice.end(code, text, code, text);
    else stream.client.close(code, text);
  }

  function askAgent(stream: Stream): void {
    const { grant } = stream;
    const msg: StreamOpenMessage = {
      type: 'stream.open',
      session_id: grant.sessionId,
      stream_id: stream.streamId,
      protocol: grant.protocol,
      expires_at: grant.expiresAt,
      ...(grant.targets && { targets: [...grant.targets] }),
    };
    // An agent that is reconnecting right now may still make it within the join timeout.
    const retry = () => {
      if (byStreamId.get(stream.streamId) === stream && !stream.agent) stream.retryTimer = setTimeout(() => askAgent(stream), AGENT_RETRY_MS);
    };
    if (deps.sendToAgent(grant.deviceId, msg)) return;
    if (!deps.routeStream) return retry();
    deps.routeStream(grant.deviceId, msg).then(
      (sent) => sent || retry(),
      (err: Error) => {
        log.debug('could not ask another node for the device', { session_id: grant.sessionId, err: err.message });
        retry();
      },
    );
  }

  /** Completes an upgrade on a stream path, for the frame-forwarding splice; undefined when refused. */
  function accept(req: IncomingMessage, socket: Duplex, head: Buffer, onSocketError: (err: Error) => void, chooseProtocol?: (offered: string[]) => string | undefined): Hop | undefined {
    const hop = acceptHop(req, socket, head, { maxPayload: STREAM_MAX_PAYLOAD, onSocketError, chooseProtocol });
    if (!hop) return undefined;
    hops.add(hop);
    void hop.done.then(() => hops.delete(hop));
    return hop;
  }

  function admitClient(ws: Hop, grant: StreamGrant): void {
    if (bySession.has(grant.sessionId)) {
      ws.close(STREAM_CLOSE.busy, 'another client is connected to this session');
      return;
    }
    // A hop starts paused: the client's frames wait until the device joins.
    const stream: Stream = { streamId: randomBase32(26), grant, client: ws };
    bySession.set(grant.sessionId, stream);
    byStreamId.set(stream.streamId, stream);
    deps.streamClients?.attached(grant.sessionId);
    const slog = log.child({ session_id: grant.sessionId, stream_id: stream.streamId });
    slog.info('client connected to stream', { protocol: grant.protocol });
    ws.onClose(function onClientCloseBeforeJoin() {
      if (!stream.splice) {
        slog.info('client left before the device joined');
        release(stream);
      }
    });
    stream.joinTimer = setTimeout(function onJoinTimeout() {
      slog.warn('device did not join the stream in time', { timeout_ms: joinTimeoutMs });
      release(stream);
      ws.close(STREAM_CLOSE.deviceTimeout, 'the device did not join in time');
    }, joinTimeoutMs);
    armTokenExpiry(stream);
    askAgent(stream);
  }

  /** A stream joined with an expiring bearer token ends (4401) when the token does. */
  function armTokenExpiry(stream: Stream): void {
    const { tokenExpiresAt } = stream.grant;
    if (tokenExpiresAt === undefined) return;
    const left = Date.parse(tokenExpiresAt) - now();
    stream.tokenTimer = setTimeout(function onTokenExpiry() {
      if (Date.parse(tokenExpiresAt) > now()) return armTokenExpiry(stream);
      log.info('closing a stream: its token expired', { session_id: stream.grant.sessionId, stream_id: stream.streamId });
      endStream(stream, STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.expired);
    }, Math.min(Math.max(0, left), MAX_TIMER_MS));
  }

  const tokenExpired = (stream: Stream) =>
    stream.grant.tokenExpiresAt !== undefined && Date.parse(stream.grant.tokenExpiresAt) <= now();

  /** The stream's recording, if it is recorded; a recorder that fails never takes the stream down. */
  function startRecording(stream: Stream): StreamRecording | undefined {
    try {
      return deps.recordings?.start(stream.grant, stream.streamId);
    } catch (err) {
      log.error('could not start recording a stream; it goes on unrecorded', { session_id: stream.grant.sessionId, err: (err as Error).message });
      return undefined;
    }
  }

  function joinAgent(ws: Hop, stream: Stream): void {
    clearTimeout(stream.joinTimer);
    clearTimeout(stream.retryTimer);
    stream.agent = ws;
    const { sessionId } = stream.grant;
    const slog = log.child({ session_id: sessionId, stream_id: stream.streamId });
    stream.recording = startRecording(stream);
    stream.splice = splice(stream.client, ws, {
      highWaterMark: SPLICE_HIGH_WATER,
      taps: stream.recording && { aToB: stream.recording.fromClient, bToA: stream.recording.fromDevice },
      onBytes(direction, bytes) {
        if (direction === 'aToB') {
          meter.count(sessionId, 'toDevice', bytes);
          deps.onBytes('to_device', bytes);
        } else {
          meter.count(sessionId, 'fromDevice', bytes);
          deps.onBytes('from_device', bytes);
        }
      },
      onEnd(side, code, reason) {
        release(stream);
        slog.info('stream ended', { closed_by: side === 'a' ? 'client' : 'device', code, reason });
        return side === 'a'
          ? { code: STREAM_CLOSE.normal, reason: 'client disconnected' }
          : { code: sendableCode(code, STREAM_CLOSE.internalError), reason: code === 1006 ? 'device connection lost' : reason };
      },
    });
    slog.info('device joined the stream');
  }

  return {
    /** A client's upgrade to `/v1/remote-access/sessions/{id}/stream`. */
    async handleClientUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, sessionId: string): Promise<void> {
      // A page of another site must not drive a session with a ticket it got hold of (CSWSH):
      // browsers say where a page comes from, and only the console's own origin, or one the
      // operator named, may open a stream. Clients that are not browsers send no Origin.
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
      if (!access.ok) ws.close(access.code, access.reason);
      else admitClient(ws, access.grant);
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
      const stream = typeof streamId === 'string' ? byStreamId.get(streamId) : undefined;
      if (!stream || stream.grant.deviceId !== deviceId || stream.agent) {
        rejectUpgrade(socket, 404, 'not_found', 'no stream is waiting for this device with that id');
        return;
      }
      const onError = (err: Error) => log.warn('device stream error', { session_id: stream.grant.sessionId, stream_id: stream.streamId, err: err.message });
      const offersAgentProtocol = (offered: string[]) => (offered.includes(AGENT_SUBPROTOCOL) ? AGENT_SUBPROTOCOL : undefined);
      const ws = accept(req, socket, head, onError, offersAgentProtocol);
      if (ws) joinAgent(ws, stream);
    },

    /** The agent will not serve a stream: the client learns why. False: no such stream waits here. */
    refused(deviceId: string, streamId: string, message: string): boolean {
      const stream = byStreamId.get(streamId);
      if (!stream || stream.grant.deviceId !== deviceId || stream.agent) return false;
      release(stream);
      stream.client.close(STREAM_CLOSE.internalError, `device refused: ${message}`);
      return true;
    },

    /** The session closed or expired: both sides close with its code, counts are written. */
    endSession(sessionId: string, reason: CloseReason): void {
      const stream = bySession.get(sessionId);
      if (!stream) return;
      // The session closed because the very token this client joined with expired: 4401, as
      // its own timer would have said a moment later.
      if (reason === 'token_expired' && tokenExpired(stream)) return endStream(stream, STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.expired);
      endStream(stream, STREAM_END[reason].code, STREAM_END[reason].text);
    },

    /** A token was revoked: the streams it admitted close with 4401 (ticket holders are the session's business). */
    endToken(tokenId: string): void {
      for (const stream of [...bySession.values()]) {
        if (stream.grant.tokenId !== tokenId) continue;
        log.info('closing a stream: its token was revoked', { session_id: stream.grant.sessionId, stream_id: stream.streamId });
        endStream(stream, STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.revoked);
      }
    },

    /** Open streams (for metrics and tests). */
    get size(): number {
      return bySession.size;
    },

    /** Closes every stream (1001) and writes the last counts. */
    async close(): Promise<void> {
      for (const stream of [...bySession.values()]) endStream(stream, STREAM_CLOSE.serverShutdown, 'server shutting down');
      meter.close();
      const open = [...hops];
      await Promise.race([Promise.all(open.map((hop) => hop.done)), new Promise<void>((r) => setTimeout(r, 2000).unref())]);
      for (const hop of open) hop.terminate();
      await Promise.all(open.map((hop) => hop.done));
    },
  };
}
export type Streams = ReturnType<typeof createStreams>;
