/**
 * @module The `shell` protocol: a login shell of the agent's user in a real PTY (node-pty), with
 * resize messages, the exit code at the end, and flow control (wetty's `flowcontrol.ts`): the
 * PTY is paused while the stream has more than its high-water mark of unsent output, so a `cat`
 * of a huge file cannot exhaust memory anywhere. The shell runs under a small wrapper that
 * marks its exit in the output stream (see `exit-marker.ts`), so no trailing output is lost.
 */
import { parseTextFrame } from '../../shared/protocol/text-frame';
import { shellFlow, shellResize, type ShellExit } from '../../shared/protocol/session-stream';
import { ExitMarkerScanner } from './exit-marker';
import { signalSession } from './process-session';
import { createPtyInput } from './pty-input';
import { createShellPool, spawnWrappedShell } from './shell-pool';
import type { Handler, HandlerFactory } from '../protocol-handler';

/** After SIGHUP, how long the session's processes get before SIGKILL. */
const HANGUP_GRACE_MS = 1000;

export const startShell: HandlerFactory = (stream, ctx): Handler => {
  // A pre-started shell has its prompt on screen already; otherwise start one now.
  const { term, pid, nonce, shell, buffered, preStarted } = ctx.shells?.(createShellPool)?.take() ?? spawnWrappedShell();
  const scanner = new ExitMarkerScanner(nonce);
  ctx.log.info('shell started', { shell, pid, pre_started: preStarted });
  let paused = false;
  /** The client asked for no more output for now (`{"type":"pause"}`). */
  let clientPaused = false;
  let finished = false;
  let resolveExit!: () => void;
  const ptyGone = new Promise<void>((resolve) => (resolveExit = resolve));

  /** The shell is done: its output is all out; send the code, close, end the wrapper. */
  function finish(code: number): void {
    if (finished) return;
    finished = true;
    ctx.log.info('shell exited', { pid, code });
    stream.sendJson({ type: 'exit', code } satisfies ShellExit);
    stream.close(1000, 'shell exited');
    // The terminal hangs up, as when a terminal window closes: the waiting wrapper ends, and so
    // do jobs left behind unless they asked to survive (nohup).
    signalSession(pid, 'SIGHUP');
  }

  function forward(data: string | Buffer): void {
    if (finished) return;
    const { output, exitCode } = scanner.push(typeof data === 'string' ? Buffer.from(data) : data);
    const keepGoing = output.length === 0 || stream.sendBinary(output);
    if (exitCode !== undefined) return finish(exitCode);
    if (!keepGoing && !paused) {
      paused = true;
      term.pause();
    }
  }
  for (const chunk of buffered.splice(0)) forward(chunk);
  term.onData(forward);
  if (!paused) term.resume(); // a pre-started shell may have been paused while it waited
  stream.on('drain', () => {
    if (paused) {
      paused = false;
      if (!clientPaused) term.resume();
    }
  });

  term.onExit(({ exitCode, signal }) => {
    // Without a marker the wrapper itself was ended (by us, or from outside the agent).
    input.close();
    const rest = scanner.flush();
    if (rest.length > 0 && !finished) stream.sendBinary(rest);
    finish(signal ? 128 + signal : exitCode);
    resolveExit();
  });

  let inputBlocked = false;
  const input = createPtyInput(
    term,
    () => {
      inputBlocked = true;
      stream.pause();
    },
    () => {
      if (!inputBlocked) return;
      inputBlocked = false;
      stream.resume();
    },
  );
  stream.on('binary', (data) => {
    if (!finished) input.write(data);
  });
  stream.on('text', (text) => {
    if (finished) return;
    const resize = parseTextFrame(shellResize, text);
    if (resize) return term.resize(resize.cols, resize.rows);
    const flow = parseTextFrame(shellFlow, text);
    if (!flow) return;
    clientPaused = flow.type === 'pause';
    if (clientPaused) term.pause();
    else if (!paused) term.resume();
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
  stream.on('close', () => void handler.stop('stream closed'));
  return handler;
};
