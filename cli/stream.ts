/**
 * @module The client side of a session's stream (docs/session-streams.md, frames): connect to
 * `websocket_url`, send typed frames and bytes, and route every text frame the device sends to
 * the request it answers (a request may be answered more than once: upload, download) or to the
 * shell's exit listeners. Text frames are parsed with the shared schemas; others are dropped.
 */
import type * as z from 'zod/mini';
import { parseTextFrame } from '../shared/protocol/text-frame';
import {
  deviceFrame,
  frames,
  type DownloadDone,
  type ErrorBody,
  type Request,
  type Response,
  type ShellExit,
  type ShellResize,
} from '../shared/protocol/session-stream';
import { connectWsClient, type WsClient } from '../shared/websocket/client';
import { CliError } from './errors';
import { explainClose } from './explain-close';
import { createMailbox, type Mailbox } from './mailbox';

/** The stream closed while something waited on it; the message says why in plain words. */
export class StreamClosedError extends CliError {
  constructor(
    readonly closeCode: number,
    readonly closeReason: string,
  ) {
    super(explainClose(closeCode, closeReason), 'stream_closed');
  }
}

/** The device answered a request with an error; `code` is its op error code. */
export class DeviceError extends CliError {
  constructor(readonly body: ErrorBody) {
    super(`${body.message} (${body.code})`, body.code);
  }
}

/** A request on its way: the frames the device sends with its id, taken in the order they came. */
export interface Call {
  readonly id: number;
  /**
   * The next answer to this request: its result, checked with `schema` when one is given.
   * Rejects with a DeviceError for an error answer, a StreamClosedError if the stream closes first.
   */
  answer<T = unknown>(schema?: z.ZodMiniType<T>): Promise<T>;
  /** The frame that ends a download (after its tar stream); rejects as `answer` does. */
  downloadDone(): Promise<DownloadDone>;
  /** Tells the device the upload's tar is all sent: `{id, op: "end"}`. */
  uploadEnd(): void;
  /** Nothing more is expected: later frames with this id are dropped. */
  finish(): void;
}

export interface ClientStream {
  /** The socket, for bytes and their flow control (send, bufferedAmount, pause, resume). */
  readonly ws: WsClient;
  /** Resolves when the stream closes, with its code and reason. */
  readonly closed: Promise<{ code: number; reason: string }>;
  /** Sends a request and resolves with its one answer's result. */
  request<T = unknown>(op: string, params?: Record<string, unknown>, schema?: z.ZodMiniType<T>): Promise<T>;
  /** Sends a request that is answered more than once (upload, download). */
  call(op: string, params?: Record<string, unknown>): Call;
  /** Sends the client's terminal size (shell). */
  resize(cols: number, rows: number): void;
  onShellExit(listener: (exit: ShellExit) => void): void;
  /** The device's binary bytes as they arrive (message boundaries are not kept). */
  onBinary(listener: (data: Buffer) => void): void;
  close(): void;
}

type CallFrame = Response | DownloadDone;

/** The result of an answer frame, or the error it carries. */
function resultOf<T>(frame: CallFrame, schema: z.ZodMiniType<T> | undefined): T {
  if (!('ok' in frame)) throw new CliError(`the device sent the end of a download where an answer was due (request ${frame.id})`, 'bad_answer');
  if (!frame.ok) throw new DeviceError(frame.error);
  if (!schema) return frame.result as T;
  const parsed = schema.safeParse(frame.result);
  if (!parsed.success) throw new CliError(`the device's answer to request ${frame.id} is not what this client expects`, 'bad_answer');
  return parsed.data;
}

/** The end of a download, or the error the device answered instead. */
function downloadDoneOf(frame: CallFrame): DownloadDone {
  if ('done' in frame) return frame;
  if (!frame.ok) throw new DeviceError(frame.error);
  throw new CliError(`the device answered request ${frame.id} again where the end of a download was due`, 'bad_answer');
}

/**
 * Connects to a session's stream and hands over the socket as it is, for a protocol that reads its
 * own frames (port-forward); rejects with a readable error if it cannot.
 */
export function connectSessionSocket(url: string): Promise<WsClient> {
  return connectWsClient(url, { maxPayload: 16 * 1024 * 1024 }).catch((err: Error) => {
    throw new CliError(`cannot connect to the session's stream: ${err.message}`, 'unreachable');
  });
}

/** Connects to a session's stream; rejects with a readable error if it cannot. */
export async function openStream(url: string): Promise<ClientStream> {
  const ws = await connectSessionSocket(url);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason })));

  let nextId = 1;
  let closedWith: StreamClosedError | undefined;
  const calls = new Map<number, Mailbox<CallFrame>>();
  const exitListeners: Array<(exit: ShellExit) => void> = [];
  const binaryListeners: Array<(data: Buffer) => void> = [];

  ws.on('binary', function streamOnBinary(data) {
    for (const l of binaryListeners) l(data);
  });
  ws.on('text', function streamOnText(text) {
    const frame = parseTextFrame(deviceFrame, text);
    if (!frame) return;
    if ('type' in frame) for (const l of exitListeners) l(frame);
    else calls.get(frame.id)?.put(frame);
  });
  void closed.then(function streamOnClosed({ code, reason }) {
    closedWith = new StreamClosedError(code, reason);
    for (const inbox of calls.values()) inbox.fail(closedWith);
    calls.clear();
  });

  const send = (frame: Request | ShellResize) => ws.send(JSON.stringify(frame));

  function call(op: string, params: Record<string, unknown> = {}): Call {
    const id = nextId++;
    const inbox = createMailbox<CallFrame>();
    if (closedWith) inbox.fail(closedWith);
    else calls.set(id, inbox);
    send(frames.request(id, op, params));
    return {
      id,
      answer: async (schema) => resultOf(await inbox.take(), schema),
      downloadDone: async () => downloadDoneOf(await inbox.take()),
      uploadEnd: () => send(frames.uploadEnd(id)),
      finish: () => void calls.delete(id),
    };
  }

  return {
    ws,
    closed,
    async request(op, params, schema) {
      const c = call(op, params);
      try {
        return await c.answer(schema);
      } finally {
        c.finish();
      }
    },
    call,
    resize: (cols, rows) => send(frames.resize(cols, rows)),
    onShellExit: (l) => void exitListeners.push(l),
    onBinary: (l) => void binaryListeners.push(l),
    close: () => ws.close(1000, ''),
  };
}
