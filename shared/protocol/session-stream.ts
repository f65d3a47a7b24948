/**
 * @module The client stream of a session (docs/session-streams.md): its path, close codes, and the frames
 * of each protocol. Binary frames carry bytes; text frames carry one JSON object each.
 */
import * as z from 'zod/mini';
import type { SessionProtocol } from './control-channel';

// The path and close codes live in a module without zod, which the agent imports from its start on.
export { STREAM_CLOSE, STREAM_END, STREAM_PATH, type StreamEndReason } from './stream-close';

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

// shell, exec: one command without a PTY (docs/session-streams.md, exec), on a stream joined with
// `&mode=exec`; the client's first frame is the request; stdout is binary frames, stderr text frames (as SSH carries stderr apart,
// as "extended data", RFC 4254 §5.2), so every binary byte is still one byte stream.

/** The most arguments an exec request carries, and the most UTF-8 bytes of one. */
export const EXEC_MAX_ARGS = 64;
export const EXEC_MAX_ARG_BYTES = 4096;
/** The most stderr bytes one `stderr` frame carries: its JSON stays under 4 KiB, a recorder's message size. */
export const EXEC_STDERR_CHUNK = 3000;

const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;
const execArg = z.string().check(
  z.maxLength(EXEC_MAX_ARG_BYTES),
  z.refine((s) => !s.includes('\0') && utf8Bytes(s) <= EXEC_MAX_ARG_BYTES, `at most ${EXEC_MAX_ARG_BYTES} bytes, no NUL`),
);

/** Client → device, the stream's first frame: run `argv` (argv[0] found on the PATH) instead of a login shell. */
export const execRequest = z.object({
  type: z.literal('exec'),
  argv: z.array(execArg).check(
    z.minLength(1),
    z.maxLength(EXEC_MAX_ARGS),
    z.refine((argv) => argv[0] !== '', 'the command is empty'),
  ),
});
export type ExecRequest = z.infer<typeof execRequest>;

/** Client → device: the client's standard input ended; the command's stdin is closed. */
export const execEof = z.object({ type: z.literal('eof') });
export type ExecEof = z.infer<typeof execEof>;

/** Device → client: the command runs; the binary bytes before this frame (if any) were not its output. */
export interface ExecStarted {
  type: 'exec.started';
}
/** Device → client: bytes the command wrote to its stderr, base64, at most EXEC_STDERR_CHUNK of them. */
export interface ExecStderr {
  type: 'stderr';
  data: string;
}
/** Device → client, last: the exit code (128 + N when killed by signal N, named in `signal`); then the device closes. */
export interface ExecExit {
  type: 'exit';
  code: number;
  signal: string | null;
}

/** Any text frame a device sends an exec client. */
export const execDeviceFrame: z.ZodMiniType<ExecStarted | ExecStderr | ExecExit> = z.union([
  z.object({ type: z.literal('exec.started') }),
  z.object({ type: z.literal('stderr'), data: z.base64().check(z.maxLength(Math.ceil(EXEC_STDERR_CHUNK / 3) * 4)) }),
  z.object({ type: z.literal('exit'), code: z.int().check(z.gte(0), z.lte(255)), signal: z.nullable(z.string().check(z.maxLength(32))) }),
]);
export type ExecDeviceFrame = ExecStarted | ExecStderr | ExecExit;

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

// file-transfer ops that change the tree (docs/session-streams.md, changing files): the params a
// device takes, which the console builds its requests with. Paths are relative to the files root.

const treePath = z.string().check(z.minLength(1), z.maxLength(4096));
/** `remove`: a file, a symbolic link (never followed), or a directory (a non-empty one only with `recursive`) → `{}`. */
export const removeParams = z.strictObject({ path: treePath, recursive: z.optional(z.boolean()) });
export type RemoveParams = z.infer<typeof removeParams>;
/** `mkdir`: one new directory in an existing one → its FileEntry. */
export const mkdirParams = z.strictObject({ path: treePath });
export type MkdirParams = z.infer<typeof mkdirParams>;
/** `rename`: moves `from` to `to`, which must not exist (`exists`), both inside the root → the moved FileEntry. */
export const renameParams = z.strictObject({ from: treePath, to: treePath });
export type RenameParams = z.infer<typeof renameParams>;

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

// Broker → client notices

/**
 * A text frame of the relay's own, to the client only (never to the device, never recorded):
 * `session_expiring` before the session's `expires_at` (TETHER_SESSION_WARNINGS: 5 and 1 minute).
 * A client shows `message`; a `code` it does not know it may ignore.
 */
export const streamNotice = z.object({
  type: z.literal('notice'),
  code: z.string().check(z.maxLength(64)),
  expires_at: z.string(),
  seconds_left: z.int().check(z.gte(0)),
  message: z.string().check(z.maxLength(1000)),
});
export type StreamNotice = z.infer<typeof streamNotice>;
/** The protocols whose clients get notices: a port-forward peer fails on any text frame not of its protocol. */
export const NOTICE_PROTOCOLS: readonly SessionProtocol[] = ['shell', 'diagnostics', 'file-transfer'];

/** The text frames a client sends, built one way. */
export const frames = {
  /** The client's terminal size (shell). */
  resize: (cols: number, rows: number): ShellResize => ({ type: 'resize', cols, rows }),
  /** A request (diagnostics, file-transfer). */
  request: (id: number, op: string, params: Record<string, unknown> = {}): Request => ({ id, op, params }),
  /** The tar of upload `id` is all sent. */
  uploadEnd: (id: number): Request => ({ id, op: 'end' }),
  /** Run one command instead of a login shell (shell, as the stream's first frame). */
  exec: (argv: string[]): ExecRequest => ({ type: 'exec', argv }),
  /** The exec's standard input ended. */
  eof: (): ExecEof => ({ type: 'eof' }),
} as const;
