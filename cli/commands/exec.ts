/**
 * @module `tether exec DEVICE CMD ARGS…` and `tether shell DEVICE -- CMD ARGS…`: one command on
 * the device without a terminal, as `ssh HOST CMD` runs one: its stdout and stderr apart on ours,
 * our stdin on its stdin, and its exit code as ours (128 + N when signal N killed it). A stream
 * that ends without the command's end exits 255, as ssh does when the connection is lost, so
 * scripts can tell the two apart; tether's own failures (the API's answers, usage) exit 1 or 2.
 * The session is closed when the command ends, whatever the outcome.
 */
import type { Context } from '../context';
import { usageError } from '../errors';
import { explainClose, serverShutDown } from '../explain-close';
import { execStreamUrl, runExec } from '../exec-stream';
import { closeSession, openSession } from '../sessions';
import { connectSessionSocket } from '../stream';
import { execRequest } from '../../shared/protocol/session-stream';
import { TETHER_VERSION } from '../../shared/version';

/** The exit code of a connection lost before the command's end, as ssh's. */
export const LOST_CONNECTION = 255;
/** As a shell reports a process that SIGPIPE ended: our reader went away. */
const BROKEN_PIPE = 128 + 13;
const SIGNAL_EXIT: Readonly<Record<string, number>> = { SIGHUP: 129, SIGINT: 130, SIGTERM: 143 };

export interface ExecFlags {
  ttl?: number;
  replace?: boolean;
  waitOnline?: boolean;
  /** False with `-n`: send no input (the command reads end-of-file at once). */
  stdin?: boolean;
}

/** The command words after DEVICE (a leading `--` dropped), checked as the device will check them. */
export function commandOf(words: readonly string[]): string[] {
  const argv = words[0] === '--' ? words.slice(1) : [...words];
  if (argv.length === 0) throw usageError('no command given: tether exec DEVICE CMD [ARGS…]');
  const parsed = execRequest.safeParse({ type: 'exec', argv });
  if (!parsed.success) throw usageError('a command is 1 to 64 words of at most 4096 bytes each, the first not empty');
  return argv;
}

export async function exec(ctx: Context, device: string, words: readonly string[], flags: ExecFlags): Promise<number> {
  const argv = commandOf(words);
  const api = ctx.api();
  const session = await openSession(api, {
    device,
    protocol: 'shell',
    ttl: flags.ttl,
    replace: flags.replace,
    waitOnline: flags.waitOnline,
    notice: ctx.notice,
  });
  let serverGone = false;
  try {
    let ws;
    try {
      ws = await connectSessionSocket(execStreamUrl(session.websocket_url!));
    } catch (err) {
      ctx.notice(`tether: ${(err as Error).message}`);
      return LOST_CONNECTION;
    }
    const outcome = await runExec(ws, argv, { stdin: flags.stdin === false ? undefined : process.stdin, stdout: process.stdout, stderr: process.stderr });
    const { code, reason } = outcome.closed;
    serverGone = serverShutDown(code, reason);
    if (outcome.exit) return outcome.exit.code;
    if (outcome.signalled) return SIGNAL_EXIT[outcome.signalled] ?? 1;
    if (outcome.brokenPipe) return BROKEN_PIPE;
    if (outcome.notStarted) {
      ctx.notice(`tether: the device did not start the command: is its agent older than this client (${TETHER_VERSION})?`);
      return 1;
    }
    ctx.notice(`tether: ${explainClose(code, reason)}`);
    return LOST_CONNECTION;
  } finally {
    if (!serverGone) await closeSession(api, session.session_id).catch((err: Error) => ctx.notice(`tether: could not close the session: ${err.message}`));
  }
}
