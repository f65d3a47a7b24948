/**
 * @module Pre-started login shells. A login shell takes 150–200 ms to print its first prompt
 * (profile scripts), longer than a person notices; once a device has served a shell session, its
 * agent keeps one started and waiting, hands it to the next shell session with its prompt already
 * on screen, and starts the next one. A waiting shell is replaced every few minutes so its login
 * environment never goes stale.
 */
import { randomBytes } from 'node:crypto';
import { homedir, userInfo } from 'node:os';
import * as pty from 'node-pty';
import type { Logger } from '../../shared/log';
import { WRAPPER_SCRIPT } from './exit-marker';
import { userEnvironment } from './shell-env';
import { signalSession } from './process-session';

/** What a waiting shell may print before it is used (its prompt); beyond it the PTY pauses. */
const MAX_BUFFERED = 64 * 1024;
const REFRESH_MS = 10 * 60_000;
const RESPAWN_AFTER_FAILURE_MS = 5000;
const HANGUP_GRACE_MS = 1000;

export interface WrappedShell {
  term: pty.IPty;
  /** The wrapper's pid: session leader of every process of the terminal. */
  pid: number;
  nonce: string;
  shell: string;
  /** Output printed before the shell was handed out. */
  buffered: Buffer[];
  /** Started ahead of its session (by the pool). */
  preStarted: boolean;
}

function loginShell(): string {
  try {
    const shell = userInfo().shell;
    if (shell) return shell;
  } catch {
    // no passwd entry for this uid
  }
  return process.env.SHELL || '/bin/sh';
}

/** Starts the user's login shell under the exit-marker wrapper in a new PTY. */
export function spawnWrappedShell(): WrappedShell {
  const shell = loginShell();
  const nonce = randomBytes(12).toString('hex');
  const term = pty.spawn('/bin/sh', ['-c', WRAPPER_SCRIPT, shell], {
    name: 'xterm-256color',
    cols: 80,
    rows: 24,
    cwd: homedir(),
    // The wrapper takes the nonce out of the environment before it starts the shell.
    env: userEnvironment(process.env, { TERM: 'xterm-256color', TETHER_EXIT_NONCE: nonce }),
    encoding: null,
  });
  return { term, pid: term.pid, nonce, shell, buffered: [], preStarted: false };
}

export interface ShellPool {
  /** A started shell (prompt printed), or a fresh one if none is waiting. */
  take(): WrappedShell;
  stop(): void;
}

export function createShellPool(log: Logger): ShellPool {
  let spare: { shell: WrappedShell; dispose(): void } | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;

  /**
   * Ends the waiting shell with a hangup first: a login shell killed outright in the middle of
   * its profile can leave locks behind (pyenv's rehash lock made every later login wait 60 s).
   */
  function discard(): void {
    if (!spare) return;
    spare.dispose();
    const { pid } = spare.shell;
    spare = undefined;
    signalSession(pid, 'SIGHUP');
    setTimeout(() => signalSession(pid, 'SIGKILL'), HANGUP_GRACE_MS).unref();
  }

  function prepare(): void {
    clearTimeout(timer);
    timer = undefined;
    if (stopped) return;
    let shell: WrappedShell;
    try {
      shell = spawnWrappedShell();
    } catch (err) {
      log.warn('could not pre-start a shell', { err: (err as Error).message });
      timer = setTimeout(prepare, RESPAWN_AFTER_FAILURE_MS);
      timer.unref();
      return;
    }
    let size = 0;
    const onData = shell.term.onData((data: string | Buffer) => {
      const chunk = typeof data === 'string' ? Buffer.from(data) : data;
      shell.buffered.push(chunk);
      size += chunk.length;
      if (size > MAX_BUFFERED) shell.term.pause();
    });
    const onExit = shell.term.onExit(() => {
      // It ended while waiting (killed from outside, a broken profile): start another later.
      if (spare?.shell !== shell) return;
      spare = undefined;
      log.warn('a pre-started shell ended while waiting');
      timer = setTimeout(prepare, RESPAWN_AFTER_FAILURE_MS);
      timer.unref();
    });
    spare = {
      shell,
      dispose: () => {
        onData.dispose();
        onExit.dispose();
      },
    };
    timer = setTimeout(() => {
      discard();
      prepare();
    }, REFRESH_MS);
    timer.unref();
  }

  prepare();
  return {
    take() {
      const taken = spare;
      if (taken) {
        taken.dispose();
        spare = undefined;
      }
      setImmediate(prepare); // the next one starts while this one is being used
      return taken ? { ...taken.shell, preStarted: true } : spawnWrappedShell();
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      discard();
    },
  };
}
