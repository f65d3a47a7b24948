/**
 * @module The client stream of a session (docs/session-streams.md): its path, close codes, and the frames
 * of each protocol. Binary frames carry bytes; text frames carry one JSON object each.
 */
import * as z from 'zod/mini';
import type { CloseReason, SessionProtocol } from './control-channel';

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
  agent_stopping: { code: STREAM_CLOSE.serverShutdown, text: 'agent stopping' },
};

/** What the relay needs to know to serve a client admitted to a session's stream. */
export interface StreamGrant {
  sessionId: string;
  deviceId: string;
  protocol: SessionProtocol;
  expiresAt: string;
  /** A port-forward session's targets (`HOST:PORT`). */
  targets?: readonly string[];
  /** The bearer token that admitted the client, if it came with one rather than a ticket. */
  tokenId?: string;
  /** When that bearer token expires (the stream closes with 4401 then); absent: never. */
  tokenExpiresAt?: string;
}

/** The API's answer to "may these credentials connect to this session's stream?". */
export type StreamAccess = { ok: true; grant: StreamGrant } | { ok: false; code: number; reason: string };

/** How long the relay waits for the device to join a stream. */
export const DEVICE_JOIN_TIMEOUT_MS = 10_000;

// shell

export const shellResize = z.object({
  type: z.literal('resize'),
  cols: z.int().check(z.gte(1), z.lte(1000)),
  rows: z.int().check(z.gte(1), z.lte(1000)),
});
export type ShellResize = z.infer<typeof shellResize>;

/**
 * Client → device: stop or go on sending the terminal's output (a browser cannot stop reading
 * its WebSocket; the web console asks the device instead, when its terminal falls behind).
 */
export const shellFlow = z.object({ type: z.enum(['pause', 'resume']) });
export type ShellFlow = z.infer<typeof shellFlow>;

export interface ShellExit {
  type: 'exit';
  code: number;
}

// diagnostics and file-transfer: request / response

export const request = z.object({
  id: z.int().check(z.gte(0), z.lte(Number.MAX_SAFE_INTEGER)),
  op: z.string().check(z.minLength(1), z.maxLength(64)),
  params: z.optional(z.record(z.string(), z.unknown())),
});
export type Request = z.infer<typeof request>;

/**
 * The error codes of the request/response ops (diagnostics, file-transfer), one catalogue with
 * what each means. A device answers with these; a client takes any code (a newer device may add one).
 */
export const OP_ERRORS = {
  bad_params: 'the frame is not a request, or its params are not what the op takes',
  unknown_op: 'the protocol has no such op',
  not_found: 'no such file or directory',
  not_a_directory: 'a path that must be a directory is not one',
  exists: 'something else is in the way',
  path_outside_root: 'a path, tar entry or link resolves outside the files root (diagnostics: outside the log dirs)',
  too_large: 'over a limit: the bytes or entries of an upload, or the free space',
  busy: 'a transfer is in progress on this stream (one at a time)',
  io_error: 'the device could not read or write (permissions, a full disk, a broken archive)',
} as const;
export type OpErrorCode = keyof typeof OP_ERRORS;

/** An op's error as a client reads it (`code` is one of OP_ERRORS from a device of this version). */
export interface ErrorBody {
  code: string;
  message: string;
}

/** An op's error as a device sends it. */
export interface OpErrorBody extends ErrorBody {
  code: OpErrorCode;
}

export type Response = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: ErrorBody };

/** Sent after the tar stream of a download. */
export interface DownloadDone {
  id: number;
  done: true;
  bytes: number;
  files: number;
}

/** The close reasons of a stream joined with a bearer token that stops being valid (code 4401). */
export const TOKEN_END_TEXT = {
  expired: 'token expired',
  revoked: 'token revoked',
} as const;

// file-transfer answers

/** What `stat` answers, and each of `list`'s `entries`. */
export const fileEntry = z.object({
  name: z.string(),
  type: z.enum(['file', 'dir', 'symlink']),
  size: z.int().check(z.gte(0)),
  mode: z.int().check(z.gte(0)),
  mtime: z.string(),
});
export type FileEntry = z.infer<typeof fileEntry>;

/** The first answer to `download`: the tar stream follows in binary frames, then DownloadDone. */
export const downloadStart = z.object({ format: z.literal('tar') });
export type DownloadStart = z.infer<typeof downloadStart>;

/** The first answer to `upload`: send the tar in binary frames, then `{id, op: "end"}`. */
export const uploadReady = z.object({ ready: z.literal(true) });
export type UploadReady = z.infer<typeof uploadReady>;

/** The last answer to `upload`, once its `end` arrived: what the device stored. */
export const uploadDone = z.object({ files: z.int().check(z.gte(0)), bytes: z.int().check(z.gte(0)) });
export type UploadDone = z.infer<typeof uploadDone>;

// The text frames a device sends a client, for the client to parse them.

const frameId = z.int().check(z.gte(0), z.lte(Number.MAX_SAFE_INTEGER));

export const errorBody: z.ZodMiniType<ErrorBody> = z.object({ code: z.string(), message: z.string() });

export const response: z.ZodMiniType<Response> = z.union([
  z.object({ id: frameId, ok: z.literal(true), result: z.unknown() }),
  z.object({ id: frameId, ok: z.literal(false), error: errorBody }),
]);

export const downloadDone: z.ZodMiniType<DownloadDone> = z.object({
  id: frameId,
  done: z.literal(true),
  bytes: z.int().check(z.gte(0)),
  files: z.int().check(z.gte(0)),
});

export const shellExit: z.ZodMiniType<ShellExit> = z.object({ type: z.literal('exit'), code: z.int() });

/** Any text frame a device sends a client: an answer, the end of a download, or a shell's exit. */
export const deviceFrame = z.union([response, downloadDone, shellExit]);
export type DeviceFrame = Response | DownloadDone | ShellExit;

/** The text frames a client sends, built one way. */
export const frames = {
  /** The client's terminal size (shell). */
  resize: (cols: number, rows: number): ShellResize => ({ type: 'resize', cols, rows }),
  /** A request (diagnostics, file-transfer). */
  request: (id: number, op: string, params: Record<string, unknown> = {}): Request => ({ id, op, params }),
  /** The tar of upload `id` is all sent. */
  uploadEnd: (id: number): Request => ({ id, op: 'end' }),
} as const;
