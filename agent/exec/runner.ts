/**
 * @module Runs one command without a shell or a PTY: `argv` executed directly (argv[0] looked up on
 * the PATH of `env`), its stdin, stdout and stderr as pipes the caller reads and writes with
 * backpressure (a paused stdout fills the pipe and the command blocks in write, so nothing
 * buffers without bound), and its exit as a result. The command leads a session of its own
 * (setsid), so `kill` ends everything it started, not just itself. Used by the shell protocol's
 * exec streams (./exec-handler); meant for any other "run this argv" (jobs' `command` kind).
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { PassThrough, type Readable, type Writable } from 'node:stream';
import { signalSession } from '../shell/process-session';

/** After SIGTERM, how long the command's processes get before SIGKILL. */
const TERM_GRACE_MS = 1000;
/** How long `kill` waits for the command to be gone after SIGKILL, at most. */
const KILL_WAIT_MS = 2000;

export interface CommandSpec {
  argv: readonly string[];
  env: Readonly<Record<string, string>>;
  cwd: string;
}

export interface CommandResult {
  /** The exit code; 128 + N when killed by signal N; 127 (not found) or 126 (cannot run) when it did not start. */
  code: number;
  signal: NodeJS.Signals | null;
  /** Why the command did not start, in the words a shell uses (`command not found`), when it did not. */
  startError?: string;
}

export interface CommandRun {
  /** Undefined when the command did not start. */
  readonly pid: number | undefined;
  /** The command's standard input: write with backpressure ('drain'); `end()` closes it. Errors (EPIPE) are swallowed. */
  readonly stdin: Writable;
  /** Its output; pause to hold the command back. */
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Resolves once the command exited and its stdout and stderr reached their end. Never rejects. */
  readonly result: Promise<CommandResult>;
  /** Ends the command and every process of its session: SIGTERM, SIGKILL after a grace; resolves once it is gone. Idempotent. */
  kill(): Promise<void>;
}

/** Signal numbers (Linux), for the code a shell reports for a command a signal killed. */
const SIGNAL_NUMBERS: Readonly<Record<string, number>> = {
  SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGILL: 4, SIGTRAP: 5, SIGABRT: 6, SIGBUS: 7, SIGFPE: 8, SIGKILL: 9, SIGUSR1: 10,
  SIGSEGV: 11, SIGUSR2: 12, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15, SIGSTKFLT: 16, SIGCHLD: 17, SIGCONT: 18, SIGSTOP: 19,
  SIGTSTP: 20, SIGTTIN: 21, SIGTTOU: 22, SIGURG: 23, SIGXCPU: 24, SIGXFSZ: 25, SIGVTALRM: 26, SIGPROF: 27, SIGWINCH: 28,
  SIGIO: 29, SIGPWR: 30, SIGSYS: 31,
}; // prettier-ignore

/** The exit code shells give a command that signal `signal` killed: 128 + its number. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (SIGNAL_NUMBERS[signal] ?? 0);
}

/** What a failed start means, as a shell says it: 127 for not found, 126 for found but not runnable. */
function startFailure(err: NodeJS.ErrnoException, command: string): CommandResult {
  if (err.code === 'ENOENT') return { code: 127, signal: null, startError: command.includes('/') ? 'No such file or directory' : 'command not found' };
  if (err.code === 'EACCES') return { code: 126, signal: null, startError: 'Permission denied' };
  return { code: 126, signal: null, startError: err.code ?? err.message };
}

/** Starts `spec.argv`; never throws: a command that cannot start resolves `result` with its reason. */
export function runCommand(spec: CommandSpec): CommandRun {
  const [command, ...args] = spec.argv;
  let child: ChildProcessByStdio<Writable, Readable, Readable>;
  try {
    child = spawn(command!, args, { cwd: spec.cwd, env: spec.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  } catch (err) {
    // Thrown at once: arguments Node refuses (checked before, at the edge) or no resources (EAGAIN).
    return notStarted(startFailure(err as NodeJS.ErrnoException, command ?? ''));
  }
  const { stdin, stdout, stderr } = child;
  stdin.on('error', () => {}); // EPIPE: the command closed its stdin or ended; what it did not read is dropped
  stdout.on('error', () => {});
  stderr.on('error', () => {});

  let gone = false;
  let exited!: () => void;
  const exitedOnce = new Promise<void>((resolve) => (exited = resolve));
  const result = new Promise<CommandResult>((resolve) => {
    child.on('error', (err: NodeJS.ErrnoException) => {
      // Emitted instead of a start (ENOENT, EACCES), or when a signal could not be sent (ignored).
      if (child.pid !== undefined) return;
      gone = true;
      exited();
      resolve(startFailure(err, command!));
    });
    child.once('close', (code, signal) => {
      gone = true;
      exited();
      resolve(signal ? { code: signalExitCode(signal), signal } : { code: code ?? 1, signal: null });
    });
  });

  let killing: Promise<void> | undefined;
  return {
    pid: child.pid,
    stdin,
    stdout,
    stderr,
    result,
    kill: () =>
      (killing ??= (async () => {
        const pid = child.pid;
        if (pid === undefined) return;
        stdout.resume(); // a command blocked writing into a paused pipe must reach its end
        stderr.resume();
        signalSession(pid, 'SIGTERM');
        const killer = setTimeout(() => signalSession(pid, 'SIGKILL'), TERM_GRACE_MS);
        let capTimer: NodeJS.Timeout | undefined;
        const cap = new Promise<void>((resolve) => (capTimer = setTimeout(resolve, TERM_GRACE_MS + KILL_WAIT_MS)));
        if (!gone) await Promise.race([exitedOnce, cap]);
        clearTimeout(killer);
        clearTimeout(capTimer);
        signalSession(pid, 'SIGKILL'); // whatever ignored SIGTERM or outlived the command
      })()),
  };
}

/** A run that never started: empty output, `result` as given. */
function notStarted(outcome: CommandResult): CommandRun {
  // Streams already at their end, so a caller handles both cases alike.
  const ended = () => {
    const s = new PassThrough();
    s.end();
    return s;
  };
  const stdin = new PassThrough();
  stdin.resume();
  return { pid: undefined, stdin, stdout: ended(), stderr: ended(), result: Promise.resolve(outcome), kill: () => Promise.resolve() };
}
