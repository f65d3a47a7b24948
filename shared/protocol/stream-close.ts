/**
 * @module A session stream's path and close codes, without zod: the agent ends its streams with
 * them from its start on, and importing `./session-stream` for them would build every protocol's
 * frame schemas in an idle agent (BENCHMARKS.md, "The agent as one file", third round).
 * `./session-stream` re-exports them.
 */
import type { CloseReason } from './control-channel';

/** `/v1/remote-access/sessions/{sessionId}/stream` */
export const STREAM_PATH = /^\/v1\/remote-access\/sessions\/([^/]+)\/stream$/;

/** Close codes sent to the client. */
export const STREAM_CLOSE = {
  normal: 1000,
  serverShutdown: 1001,
  internalError: 1011,
  sessionClosed: 4000,
  sessionExpired: 4001,
  unknownSession: 4004,
  busy: 4009,
  /** The other end broke the frames of the session's protocol (a port-forward stream's records or messages). */
  protocolViolation: 4400,
  noCredentials: 4401,
  deviceTimeout: 4504,
} as const;

/** Why a session's streams end: the session closed for a reason, or the device's agent is stopping. */
export type StreamEndReason = CloseReason | 'agent_stopping';

/**
 * The close code and reason a client gets when a session's stream ends for `reason`, the same
 * from the relay and from the device.
 */
export const STREAM_END: Readonly<Record<StreamEndReason, { code: number; text: string }>> = {
  closed: { code: STREAM_CLOSE.sessionClosed, text: 'session closed' },
  expired: { code: STREAM_CLOSE.sessionExpired, text: 'session expired' },
  token_expired: { code: STREAM_CLOSE.sessionClosed, text: 'session closed: the token that opened it expired' },
  device_deleted: { code: STREAM_CLOSE.sessionClosed, text: 'session closed: the device was deleted' },
  idle: { code: STREAM_CLOSE.sessionClosed, text: 'session closed: no client was connected for too long' },
  server_shutdown: { code: STREAM_CLOSE.serverShutdown, text: 'server shutting down' },
  access_expired: { code: STREAM_CLOSE.sessionExpired, text: 'session expired: its access grant ended' },
  access_revoked: { code: STREAM_CLOSE.sessionClosed, text: 'session closed: its access grant was revoked' },
  agent_stopping: { code: STREAM_CLOSE.serverShutdown, text: 'agent stopping' },
};
