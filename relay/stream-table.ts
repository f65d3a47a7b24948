/**
 * @module The session streams the relay holds, from a client's admission to the end of its
 * splice: the client waits (its frames held) while the device is asked to dial a data WebSocket
 * for it (retried while its agent may be reconnecting, or asked through another cluster node),
 * for at most the join timeout (4504); once the device joins, the two are spliced, counted
 * (`./byte-meter`) and maybe recorded. A stream joined with an expiring bearer token ends (4401)
 * when the token does.
 */
import type { RelayToAgentMessage, StreamMode } from '../shared/protocol/control-channel';
import { randomBase32 } from '../shared/ids';
import type { Logger } from '../shared/log';
import type { StreamRecorder, StreamRecording } from '../shared/relay/recording';
import { STREAM_CLOSE, TOKEN_END_TEXT, type StreamGrant } from '../shared/protocol/session-stream';
import { sendableCode } from '../shared/websocket/close';
import type { ByteMeter } from './byte-meter';
import type { ExpiryNotices } from './expiry-notices';
import type { Hop } from './hop';
import { splice, type Splice } from './splice';

export type StreamOpenMessage = Extract<RelayToAgentMessage, { type: 'stream.open' }>;

/** Per direction, bytes accepted but not yet written before the source is paused. */
export const SPLICE_HIGH_WATER = 4 * 1024 * 1024;
const AGENT_RETRY_MS = 250;
// setTimeout's ceiling (about 24.8 days); a later expiry re-arms when it fires.
const MAX_TIMER_MS = 2 ** 31 - 1;

export interface Stream {
  streamId: string;
  grant: StreamGrant;
  /** What the client asked the stream to run (shell sessions: a login shell or one command). */
  mode: StreamMode;
  client: Hop;
  agent?: Hop;
  splice?: Splice;
  joinTimer?: NodeJS.Timeout;
  retryTimer?: NodeJS.Timeout;
  /** Ends a stream joined with a bearer token when that token expires. */
  tokenTimer?: NodeJS.Timeout;
  recording?: StreamRecording | undefined;
}

/** How the streams reach devices and whom they tell what passes. */
export interface StreamRouting {
  sendToAgent(deviceId: string, msg: StreamOpenMessage): boolean;
  /**
   * Asks the device's agent to open a stream when it is not connected here (another cluster
   * node holds it); true when it was asked. None: only agents connected here are asked.
   */
  routeStream?(deviceId: string, msg: StreamOpenMessage): Promise<boolean>;
  /** Every forwarded frame, for the metrics. */
  onBytes(direction: 'to_device' | 'from_device', bytes: number): void;
  /** Records streams (shell sessions) as they pass; none: nothing is recorded. */
  recordings?: StreamRecorder | undefined;
  /** Told when a client is admitted to a session's stream and when that stream is released (a session nobody uses closes). */
  streamClients?: { attached(sessionId: string): void; detached(sessionId: string): void } | undefined;
}

export interface StreamTableDeps {
  log: Logger;
  routing: StreamRouting;
  meter: ByteMeter;
  joinTimeoutMs: number;
  /** Wall clock (ms), to compare with token expiry times. */
  now: () => number;
  /** Warns the clients before their sessions end; none: no notices. */
  notices?: ExpiryNotices | undefined;
}

export function createStreamTable({ log, routing: deps, meter, joinTimeoutMs, now, notices }: StreamTableDeps) {
  const bySession = new Map<string, Stream>();
  const byStreamId = new Map<string, Stream>();

  /** Forgets a stream; its byte counts are written at once. */
  function release(stream: Stream): void {
    clearTimeout(stream.joinTimer);
    clearTimeout(stream.retryTimer);
    clearTimeout(stream.tokenTimer);
    if (bySession.get(stream.grant.sessionId) === stream) {
      bySession.delete(stream.grant.sessionId);
      notices?.forget(stream.grant.sessionId);
    }
    // Released more than once (an end, then the close it causes): the client left once.
    if (byStreamId.delete(stream.streamId)) deps.streamClients?.detached(stream.grant.sessionId);
    meter.flush(stream.grant.sessionId);
    stream.recording?.end();
    stream.recording = undefined;
  }

  /** Ends a stream from the relay's side: counts written, both sides closed with `code`. */
  function end(stream: Stream, code: number, text: string): void {
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
      ...(stream.mode === 'exec' && { mode: stream.mode }),
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

  /** A stream joined with an expiring bearer token ends (4401) when the token does. */
  function armTokenExpiry(stream: Stream): void {
    const { tokenExpiresAt } = stream.grant;
    if (tokenExpiresAt === undefined) return;
    const left = Date.parse(tokenExpiresAt) - now();
    stream.tokenTimer = setTimeout(
      function onTokenExpiry() {
        if (Date.parse(tokenExpiresAt) > now()) return armTokenExpiry(stream);
        log.info('closing a stream: its token expired', { session_id: stream.grant.sessionId, stream_id: stream.streamId });
        end(stream, STREAM_CLOSE.noCredentials, TOKEN_END_TEXT.expired);
      },
      Math.min(Math.max(0, left), MAX_TIMER_MS),
    );
  }

  /** The stream's recording, if it is recorded; a recorder that fails never takes the stream down. */
  function startRecording(stream: Stream): StreamRecording | undefined {
    try {
      return deps.recordings?.start(stream.grant, stream.streamId);
    } catch (err) {
      log.error('could not start recording a stream; it goes on unrecorded', { session_id: stream.grant.sessionId, err: (err as Error).message });
      return undefined;
    }
  }

  return {
    release,
    end,

    /** Admits the client `ws` to the session's stream (4009 when another client has it) and asks the device to join. */
    admit(ws: Hop, grant: StreamGrant, mode: StreamMode = 'shell'): void {
      if (bySession.has(grant.sessionId)) {
        ws.close(STREAM_CLOSE.busy, 'another client is connected to this session');
        return;
      }
      // A hop starts paused: the client's frames wait until the device joins.
      const stream: Stream = { streamId: randomBase32(26), grant, mode, client: ws };
      bySession.set(grant.sessionId, stream);
      byStreamId.set(stream.streamId, stream);
      deps.streamClients?.attached(grant.sessionId);
      notices?.watch(stream);
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
    },

    /** The stream `streamId` when it waits for device `deviceId` to join. */
    waiting(streamId: string | undefined, deviceId: string): Stream | undefined {
      const stream = streamId === undefined ? undefined : byStreamId.get(streamId);
      return stream && stream.grant.deviceId === deviceId && !stream.agent ? stream : undefined;
    },

    /** The device joined: the two sides are spliced, counted and maybe recorded. */
    join(ws: Hop, stream: Stream): void {
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
          meter.count(sessionId, direction === 'aToB' ? 'toDevice' : 'fromDevice', bytes);
          deps.onBytes(direction === 'aToB' ? 'to_device' : 'from_device', bytes);
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
    },

    /** Whether the bearer token the stream was joined with has expired. */
    tokenExpired: (stream: Stream): boolean => stream.grant.tokenExpiresAt !== undefined && Date.parse(stream.grant.tokenExpiresAt) <= now(),

    ofSession: (sessionId: string): Stream | undefined => bySession.get(sessionId),

    /** The session's end moved (an extend): its stream's client is warned before the new one. */
    extended(sessionId: string, expiresAt: string): void {
      const stream = bySession.get(sessionId);
      if (!stream) return;
      stream.grant = { ...stream.grant, expiresAt };
      notices?.watch(stream);
    },
    /** Every stream with a client (a copy: ending one changes the table). */
    all: (): Stream[] => [...bySession.values()],
    get size(): number {
      return bySession.size;
    },
  };
}
