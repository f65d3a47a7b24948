/**
 * @module The `shell` protocol: a login shell of the agent's user in a real PTY (node-pty), with
 * resize messages, the exit code at the end, and flow control (wetty's `flowcontrol.ts`): the
 * PTY is paused while the stream has more than its high-water mark of unsent output, so a `cat`
 * of a huge file cannot exhaust memory anywhere.
 */
import { homedir, userInfo } from 'node:os';
import * as pty from 'node-pty';
import { parseMessage } from '../../shared/protocol';
import { shellResize } from '../../shared/stream';
import type { Handler, HandlerFactory } from './types';
import { processExists, signalSession } from './process-session';

/** How often to check, while the PTY is paused, whether the shell has exited. */
const EXIT_WATCH_MS = 20;
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
  const term = pty.spawn(shell, ['-l'], {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    cwd: homedir(),
    env: { ...process.env, TERM: 'xterm-256color', TETHER_SESSION_ID: ctx.sessionId },
    encoding: null,
  });
  const pid = term.pid;
  ctx.log.info('shell started', { shell, pid });
  let paused = false;
  let exited = false;
  let exitWatch: NodeJS.Timeout | undefined;
  let resolveExit!: () => void;
  const exitedPromise = new Promise<void>((resolve) => (resolveExit = resolve));

  function resume(): void {
    clearInterval(exitWatch);
    exitWatch = undefined;
    if (paused) {
      paused = false;
      term.resume();
    }
  }

  term.onData((data: string | Buffer) => {
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    if (channel.sendBinary(bytes) || paused || exited) return;
    paused = true;
    term.pause();
    // node-pty waits for the PTY to be read to its end before it reports the exit, but gives up
    // after 200 ms and drops the rest (microsoft/node-pty#72): once the shell is gone, read on.
    exitWatch = setInterval(() => {
      if (!processExists(pid)) resume();
    }, EXIT_WATCH_MS);
  });
  channel.on('drain', resume);

  term.onExit(({ exitCode, signal }) => {
    exited = true;
    resume();
    const code = signal ? 128 + signal : exitCode;
    ctx.log.info('shell exited', { pid, code });
    // Every byte of output was emitted before this event; the exit message follows it in order.
    channel.sendJson({ type: 'exit', code });
    channel.close(1000, 'shell exited');
    resolveExit();
  });

  channel.on('binary', (data) => {
    if (!exited) term.write(data);
  });
  channel.on('text', (text) => {
    const resize = parseMessage(shellResize, text);
    if (resize && !exited) term.resize(resize.cols, resize.rows);
  });

  let stopping: Promise<void> | undefined;
  const handler: Handler = {
    stop: (reason) =>
      (stopping ??= (async () => {
        if (exited) return;
        ctx.log.info('ending shell', { pid, reason });
        signalSession(pid, 'SIGHUP');
        const killer = setTimeout(() => signalSession(pid, 'SIGKILL'), HANGUP_GRACE_MS);
        const cap = new Promise<void>((resolve) => setTimeout(resolve, HANGUP_GRACE_MS + 2000).unref());
        await Promise.race([exitedPromise, cap]);
        clearTimeout(killer);
        signalSession(pid, 'SIGKILL'); // whatever ignored the hangup, or outlived the shell
        resume();
      })()),
  };
  channel.on('close', () => void handler.stop('stream closed'));
  return handler;
};
