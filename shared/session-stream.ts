/**
 * @module The client stream of a session (CONTRACT 4.3): its path, close codes, and the frames
 * of each protocol. Binary frames carry bytes; text frames carry one JSON object each.
 */
import { z } from 'zod';

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
