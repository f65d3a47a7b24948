/**
 * @module The `shell` protocol: a login shell of the agent's user in a real PTY (node-pty), with
 * resize messages, the exit code at the end, and flow control (wetty's `flowcontrol.ts`): the
 * PTY is paused while the stream has more than its high-water mark of unsent output, so a `cat`
 * of a huge file cannot exhaust memory anywhere. The shell runs under a small wrapper that
 * marks its exit in the output stream (see `exit-marker.ts`), so no trailing output is lost.
 */
import { randomBytes } from 'node:crypto';
import { homedir, userInfo } from 'node:os';
import * as pty from 'node-pty';
import { parseMessage } from '../../shared/protocol';
import { shellResize } from '../../shared/stream';
import { ExitMarkerScanner, WRAPPER_SCRIPT } from './exit-marker';
import { signalSession } from './process-session';
import type { Handler, HandlerFactory } from './types';

/** After SIGHUP, how long the session's processes get before SIGKILL. */
const HANGUP_GRACE_MS = 1000;

function loginShell(): string {
  try {
    const shell = userInfo().shell;
    if (shell) return shell;
  } catch {
    // no passwd entry for this uid
  }
  return process.env.SHELL || '/bin/sh';
}

export const startShell: HandlerFactory = (channel, ctx): Handler => {
  const shell = loginShell();
  const nonce = randomBytes(12).toString('hex');
  const term = pty.spawn('/bin/sh', ['-c', WRAPPER_SCRIPT, shell], {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    cwd: homedir(),
    env: { ...process.env, TERM: 'xterm-256color', TETHER_SESSION_ID: ctx.sessionId, TETHER_EXIT_NONCE: nonce },
    encoding: null,
  });
  const pid = term.pid; // the wrapper: session leader of every process of this terminal
  const scanner = new ExitMarkerScanner(nonce);
  ctx.log.info('shell started', { shell, pid });
  let paused = false;
  let finished = false;
  let resolveExit!: () => void;
  const ptyGone = new Promise<void>((resolve) => (resolveExit = resolve));

  /** The shell is done: its output is all out; send the code, close, end the wrapper. */
  function finish(code: number): void {
    if (finished) return;
    finished = true;
    ctx.log.info('shell exited', { pid, code });
    channel.sendJson({ type: 'exit', code });
    channel.close(1000, 'shell exited');
    signalSession(pid, 'SIGKILL');
  }

  term.onData((data: string | Buffer) => {
    if (finished) return;
    const { output, exitCode } = scanner.push(typeof data === 'string' ? Buffer.from(data) : data);
    const keepGoing = output.length === 0 || channel.sendBinary(output);
    if (exitCode !== undefined) return finish(exitCode);
    if (!keepGoing && !paused) {
      paused = true;
      term.pause();
    }
  });
  channel.on('drain', () => {
    if (paused) {
      paused = false;
      term.resume();
    }
  });

  term.onExit(({ exitCode, signal }) => {
    // Without a marker the wrapper itself was ended (by us, or from outside the agent).
    const rest = scanner.flush();
    if (rest.length > 0 && !finished) channel.sendBinary(rest);
    finish(signal ? 128 + signal : exitCode);
    resolveExit();
  });

  channel.on('binary', (data) => {
    if (!finished) term.write(data);
  });
  channel.on('text', (text) => {
    const resize = parseMessage(shellResize, text);
    if (resize && !finished) term.resize(resize.cols, resize.rows);
  });

  let stopping: Promise<void> | undefined;
  const handler: Handler = {
    stop: (reason) =>
      (stopping ??= (async () => {
        if (!finished) ctx.log.info('ending shell', { pid, reason });
        finished = true; // no exit message: the client is gone or the session ended
        if (paused) term.resume(); // let the PTY reach its end
        signalSession(pid, 'SIGHUP');
        const killer = setTimeout(() => signalSession(pid, 'SIGKILL'), HANGUP_GRACE_MS);
        const cap = new Promise<void>((resolve) => setTimeout(resolve, HANGUP_GRACE_MS + 2000).unref());
        await Promise.race([ptyGone, cap]);
        clearTimeout(killer);
        signalSession(pid, 'SIGKILL'); // whatever ignored the hangup or outlived the shell
      })()),
  };
  channel.on('close', () => void handler.stop('stream closed'));
  return handler;
};
