/**
 * @module The client stream of a session (CONTRACT 4.3): its path, close codes, and the frames
 * of each protocol. Binary frames carry bytes; text frames carry one JSON object each.
 */
import { z } from 'zod';
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
  noCredentials: 4401,
  deviceTimeout: 4504,
} as const;

/** Why a session's streams end: the session closed for a reason, or the device's agent is stopping. */
export type StreamEndReason = CloseReason | 'agent_stopping';

/**
 * The close code and reason a client gets when a session's stream ends for `reason`, the same
 * from the broker and from the device.
 */
export const STREAM_END: Readonly<Record<StreamEndReason, { code: number; text: string }>> = {
  closed: { code: STREAM_CLOSE.sessionClosed, text: 'session closed' },
  expired: { code: STREAM_CLOSE.sessionExpired, text: 'session expired' },
  token_expired: { code: STREAM_CLOSE.sessionClosed, text: 'session closed: the token that opened it expired' },
  device_deleted: { code: STREAM_CLOSE.sessionClosed, text: 'session closed: the device was deleted' },
  server_shutdown: { code: STREAM_CLOSE.serverShutdown, text: 'server shutting down' },
  agent_stopping: { code: STREAM_CLOSE.serverShutdown, text: 'agent stopping' },
};

/** What the broker needs to know to serve a client admitted to a session's stream. */
export interface StreamGrant {
  sessionId: string;
  deviceId: string;
  protocol: 'diagnostics' | 'shell' | 'file-transfer';
  expiresAt: string;
  /** The bearer token that admitted the client, if it came with one rather than a ticket. */
  tokenId?: string;
  /** When that bearer token expires (the stream closes with 4401 then); absent: never. */
  tokenExpiresAt?: string;
}

/** The API's answer to "may these credentials connect to this session's stream?". */
export type StreamAccess = { ok: true; grant: StreamGrant } | { ok: false; code: number; reason: string };

/** How long the broker waits for the device to join a stream. */
export const DEVICE_JOIN_TIMEOUT_MS = 10_000;

// shell

export const shellResize = z.object({
  type: z.literal('resize'),
  cols: z.number().int().min(1).max(1000),
  rows: z.number().int().min(1).max(1000),
});
export type ShellResize = z.infer<typeof shellResize>;

export interface ShellExit {
  type: 'exit';
  code: number;
}

// diagnostics and file-transfer: request / response

export const request = z.object({
  id: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  op: z.string().min(1).max(64),
  params: z.record(z.string(), z.unknown()).optional(),
});
export type Request = z.infer<typeof request>;

export interface ErrorBody {
  code: string;
  message: string;
}

export type Response =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: ErrorBody };

/** Sent after the tar stream of a download. */
export interface DownloadDone {
  id: number;
  done: true;
  bytes: number;
  files: number;
}
