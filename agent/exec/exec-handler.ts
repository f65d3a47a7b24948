/**
 * @module A shell stream that runs one command instead of a login shell (docs/session-streams.md,
 * exec): the client's binary frames go to its stdin (`eof` closes it), its stdout leaves as binary
 * frames and its stderr as `stderr` text frames, both held back (the pipes paused) while the
 * stream has more than its high-water mark unsent, then `exit` and the close. A stream that ends
 * first ends the command and every process it started (./runner).
 */
import { homedir } from 'node:os';
import { parseTextFrame } from '../../shared/protocol/text-frame';
import { EXEC_STDERR_CHUNK, execEof, type ExecExit, type ExecRequest, type ExecStarted, type ExecStderr } from '../../shared/protocol/session-stream';
import type { DataStream } from '../data-stream';
import type { Handler, HandlerContext } from '../protocol-handler';
import { userEnvironment } from '../shell/shell-env';
import { runCommand, type CommandResult } from './runner';

/** The environment of a command: the shell's (no `TETHER_*`, nothing of the agent's own), without TERM: there is no terminal. */
function commandEnvironment(): Record<string, string> {
  const env = userEnvironment(process.env);
  delete env.TERM;
  return env;
}

/** Sends `bytes` as stderr frames; false once the stream is over its high-water mark. */
function sendStderr(stream: DataStream, bytes: Buffer): boolean {
  let room = true;
  for (let at = 0; at < bytes.length; at += EXEC_STDERR_CHUNK) {
    const data = bytes.subarray(at, at + EXEC_STDERR_CHUNK).toString('base64');
    room = stream.sendJson({ type: 'stderr', data } satisfies ExecStderr);
  }
  return room;
}

export function startExec(stream: DataStream, ctx: HandlerContext, request: ExecRequest): Handler {
  const run = runCommand({ argv: request.argv, env: commandEnvironment(), cwd: homedir() });
  const { pid } = run;
  // Only the program's name: its arguments may hold secrets, and the agent's log is not the audit.
  ctx.log.info('command started', { command: request.argv[0], pid });
  stream.sendJson({ type: 'exec.started' } satisfies ExecStarted);
  let finished = false;

  let outputHeld = false;
  const holdOutput = () => {
    if (outputHeld) return;
    outputHeld = true;
    run.stdout.pause();
    run.stderr.pause();
  };
  // After the end (the stream closed), output is dropped: the command is being ended.
  run.stdout.on('data', (chunk: Buffer) => {
    if (!finished && !stream.sendBinary(chunk)) holdOutput();
  });
  run.stderr.on('data', (chunk: Buffer) => {
    if (!finished && !sendStderr(stream, chunk)) holdOutput();
  });
  stream.on('drain', () => {
    if (!outputHeld || finished) return;
    outputHeld = false;
    run.stdout.resume();
    run.stderr.resume();
  });

  // The client's bytes wait in the socket (and at the relay, and at the client) while the
  // command does not read them.
  let inputHeld = false;
  const releaseInput = () => {
    if (!inputHeld) return;
    inputHeld = false;
    stream.resume();
  };
  run.stdin.on('drain', releaseInput);
  run.stdin.on('close', releaseInput);
  stream.on('binary', (data) => {
    if (finished || run.stdin.writableEnded || run.stdin.destroyed) return;
    if (!run.stdin.write(data) && !inputHeld) {
      inputHeld = true;
      stream.pause();
    }
  });
  stream.on('text', (text) => {
    if (!finished && parseTextFrame(execEof, text)) run.stdin.end();
  });

  function finish(result: CommandResult): void {
    if (finished) return;
    finished = true;
    releaseInput();
    if (result.startError) sendStderr(stream, Buffer.from(`${request.argv[0]}: ${result.startError}\n`));
    ctx.log.info('command exited', { pid, code: result.code, signal: result.signal });
    stream.sendJson({ type: 'exit', code: result.code, signal: result.signal } satisfies ExecExit);
    stream.close(1000, 'command exited'); // the close ends what the command left running (stop)
  }
  // Every byte of stdout and stderr went out before this: the result waits for their end.
  void run.result.then(finish);

  let stopping: Promise<void> | undefined;
  const handler: Handler = {
    stop: (reason) =>
      (stopping ??= (async () => {
        if (!finished) ctx.log.info('ending command', { pid, reason });
        finished = true; // no exit message: the client is gone or the session ended
        await run.kill();
      })()),
  };
  stream.on('close', () => void handler.stop('stream closed'));
  return handler;
}
