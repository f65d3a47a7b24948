/**
 * @module A `shell` stream its client opened with `mode=exec` (docs/session-streams.md, exec): the
 * relay said so in `stream.open`, so no PTY starts. The client's first frame must be the exec
 * request, within EXEC_REQUEST_WAIT_MS; ./exec-handler then runs the command. Anything else first,
 * or nothing in time, closes the stream with 4400 and runs nothing.
 */
import { EXEC_MAX_ARG_BYTES, EXEC_MAX_ARGS, execRequest, STREAM_CLOSE } from '../../shared/protocol/session-stream';
import type { Handler, HandlerFactory } from '../protocol-handler';
import { startExec } from './exec-handler';

/**
 * How long an exec stream waits for its request. A client sends it as soon as it connects (frames
 * sent before the device joined arrive right after it): the bound only ends streams whose client
 * never will, so they hold no slot of the agent's `--max-sessions`.
 */
export const EXEC_REQUEST_WAIT_MS = 10_000;

const EXEC_LIMITS = `argv is 1 to ${EXEC_MAX_ARGS} strings of at most ${EXEC_MAX_ARG_BYTES} bytes, without NUL, the first not empty`;

/** Why a first frame is not a request to run: it claims to be one and is not, or it is something else. */
function refusalOf(frame: unknown): string {
  const claimsExec = (frame as { type?: unknown } | null | undefined)?.type === 'exec';
  return claimsExec ? `bad exec request: ${EXEC_LIMITS}` : 'bad exec request: the first frame must be {"type":"exec","argv":[…]}';
}

export const startExecStream: HandlerFactory = (stream, ctx): Handler => {
  let command: Handler | undefined;

  function stopListening(): void {
    clearTimeout(timer);
    stream.off('text', onText);
    stream.off('binary', onBinary);
  }

  function refuse(reason: string): void {
    stopListening();
    ctx.log.info('refusing an exec stream', { reason });
    stream.close(STREAM_CLOSE.protocolViolation, reason);
  }

  function onText(text: string): void {
    stopListening();
    const frame = jsonOf(text);
    const parsed = execRequest.safeParse(frame);
    if (!parsed.success) return refuse(refusalOf(frame));
    // Synchronously, before the next frame is read: the command's stdin starts with it.
    command = startExec(stream, ctx, parsed.data);
  }
  const onBinary = () => refuse(refusalOf(undefined));

  stream.on('text', onText);
  stream.on('binary', onBinary);
  const timer = setTimeout(() => refuse(`no exec request within ${EXEC_REQUEST_WAIT_MS / 1000} s`), EXEC_REQUEST_WAIT_MS);
  stream.once('close', stopListening);

  return {
    async stop(reason) {
      stopListening();
      await command?.stop(reason);
    },
  };
};

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
