/**
 * @module The client side of an exec stream (docs/session-streams.md, exec): joins the session's
 * stream in exec mode (`execStreamUrl`), asks the device to run one command, then joins our stdin to its stdin (our end of input closes its stdin), its
 * stdout to our stdout and its stderr to our stderr, with backpressure both ways: the socket is
 * not read while our stdout or stderr cannot take more, our stdin is not read while the socket
 * has more than a megabyte unsent. Resolves once the stream closes, with what ended it.
 */
import type { Readable, Writable } from 'node:stream';
import { parseTextFrame } from '../shared/protocol/text-frame';
import { STREAM_MODE_PARAM } from '../shared/protocol/control-channel';
import { execDeviceFrame, frames, type ExecExit } from '../shared/protocol/session-stream';
import type { WsClient } from '../shared/websocket/client';

const INPUT_HIGH_WATER = 1024 * 1024;
/**
 * How long the device has to say that the command runs (a device too old for exec runs a shell and
 * never says it): longer than the relay waits for the device to join (10 s, then 4504).
 */
export const EXEC_START_TIMEOUT_MS = 15_000;

export interface ExecIo {
  /** Our standard input, or undefined to send none (`-n`: the command reads end-of-file at once). */
  stdin: Readable | undefined;
  stdout: Writable;
  stderr: Writable;
}

export interface ExecOutcome {
  /** The command's end, when the device said it. */
  exit?: ExecExit;
  /** How the stream closed. */
  closed: { code: number; reason: string };
  /** We closed the stream because of this signal. */
  signalled?: NodeJS.Signals;
  /** We closed the stream because our stdout's reader went away (EPIPE). */
  brokenPipe?: boolean;
  /** The device never said the command started. */
  notStarted?: boolean;
}

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** A shell session's `websocket_url` asking for one command instead of a login shell (`&mode=exec`). */
export function execStreamUrl(websocketUrl: string): string {
  const url = new URL(websocketUrl);
  url.searchParams.set(STREAM_MODE_PARAM, 'exec');
  return url.toString();
}

/** Runs `argv` on the stream `ws` (just connected) until the stream closes. */
export async function runExec(ws: WsClient, argv: string[], io: ExecIo): Promise<ExecOutcome> {
  const outcome: Partial<ExecOutcome> = {};
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason })));
  const leave = (reason: string) => ws.close(1000, reason);
  ws.send(JSON.stringify(frames.exec(argv)));
  const startTimer = setTimeout(() => {
    outcome.notStarted = true;
    leave('the command did not start');
  }, EXEC_START_TIMEOUT_MS);

  // Our outputs that cannot take more right now: the socket is read again once both can.
  let blocked = 0;
  const write = (out: Writable, data: Buffer) => {
    if (out.write(data)) return;
    if (blocked++ === 0) ws.pause();
    out.once('drain', () => {
      if (--blocked === 0 && ws.state === 'open') ws.resume();
    });
  };
  const onOutputError = (err: NodeJS.ErrnoException) => {
    // The reader of our stdout went away (`| head`): as ssh, which that SIGPIPE ends, stop here.
    if (err.code === 'EPIPE') outcome.brokenPipe = true;
    leave('client output closed');
  };
  io.stdout.on('error', onOutputError);
  io.stderr.on('error', () => {});

  let started = false;
  ws.on('binary', (data) => {
    if (started) write(io.stdout, data); // before `exec.started`: a shell's bytes, not the command's
  });
  ws.on('text', (text) => {
    const frame = parseTextFrame(execDeviceFrame, text);
    if (!frame) return; // another kind of message (a newer device's, a notice): not for the command's output
    if (frame.type === 'stderr') {
      if (started) write(io.stderr, Buffer.from(frame.data, 'base64'));
    } else if (frame.type === 'exit') {
      if (started) outcome.exit = frame;
    } else if (!started) {
      started = true;
      clearTimeout(startTimer);
      sendInput();
    }
  });

  let inputDone = () => {};
  function sendInput(): void {
    const { stdin } = io;
    if (!stdin) return void ws.send(JSON.stringify(frames.eof()));
    const onData = (data: Buffer) => {
      ws.send(data, () => {
        if (stdin.isPaused() && ws.bufferedAmount < INPUT_HIGH_WATER / 4 && ws.state === 'open') stdin.resume();
      });
      if (ws.bufferedAmount > INPUT_HIGH_WATER) stdin.pause();
    };
    const onEnd = () => ws.send(JSON.stringify(frames.eof()));
    stdin.on('data', onData);
    stdin.once('end', onEnd);
    stdin.on('error', onEnd); // an input we cannot read ends, as /dev/null would
    stdin.resume();
    inputDone = () => {
      stdin.off('data', onData);
      stdin.off('end', onEnd);
      stdin.pause();
    };
  }

  const onSignal = (signal: NodeJS.Signals) => {
    outcome.signalled ??= signal;
    leave('client interrupted'); // the session is closed next, which ends the command
  };
  for (const s of SIGNALS) process.on(s, onSignal);
  try {
    outcome.closed = await closed;
  } finally {
    clearTimeout(startTimer);
    for (const s of SIGNALS) process.off(s, onSignal);
    inputDone();
  }
  return outcome as ExecOutcome;
}
