/**
 * @module `tether forward --stdio DEVICE HOST:PORT`: standard input and output joined to one
 * connection to HOST:PORT on the device, for `ssh -o ProxyCommand=…`. The connection is carried
 * by the device's forward master (./forward-master), started here detached when none runs, so
 * that many ssh connections to one device share the one session the server allows. Nothing but
 * the connection's bytes goes to stdout; errors go to stderr. Backpressure runs through: a full
 * stdout stops the socket being read (and the device's window closes), a slow socket stops stdin
 * being read. Stdin's end half-closes toward the device; the device's end ends the command.
 * Exit codes: 0 a clean end, 255 the connection to tether lost or never made (as ssh's own),
 * 1 other failures, 2 usage.
 */
import { spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { formatTarget, parseTarget } from '../../shared/protocol/port-forward/targets';
import { credentials } from '../config';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';
import { masterLine, readLines, sendLine, type MasterLine } from './forward-control';
import { connectUnix, masterPaths, type MasterPaths } from './forward-socket';
import { selfCommand } from './self-command';

/** The options of `forward --stdio` (the master gets the first caller's). */
export interface StdioFlags {
  ttl?: number | undefined;
  replace?: boolean | undefined;
  waitOnline?: boolean | undefined;
  json?: boolean | undefined;
  /** Seconds the master keeps the session after its last connection. */
  persist?: number | undefined;
}

/** How long a master we started has to listen. */
const MASTER_START_MS = 10_000;
/** How long the master's last word may lag behind the connection's end. */
const LAST_WORD_MS = 5000;
export const DEFAULT_PERSIST_S = 10;
/** Exit code of a connection to tether lost or never made, as ssh's. */
export const EXIT_LOST = 255;

const exitFor = (code: string) => (code === 'usage' ? 2 : code === 'unreachable' || code === 'stream_closed' ? EXIT_LOST : 1);

/** Starts a master for `device`, detached, its output in its log only. */
function startMaster(device: string, flags: StdioFlags): Promise<number | null> {
  const [command, ...pre] = selfCommand();
  const args = [...pre, 'forward-master', device, '--persist', String(flags.persist ?? DEFAULT_PERSIST_S)];
  if (flags.ttl !== undefined) args.push('--ttl', String(flags.ttl));
  if (flags.replace) args.push('--replace');
  if (flags.waitOnline) args.push('--wait-online');
  const child = spawn(command!, args, { detached: true, stdio: 'ignore', env: process.env });
  child.unref();
  child.on('error', () => {});
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** A control connection to the device's master, which is started when none answers. */
async function reachMaster(paths: MasterPaths, device: string, flags: StdioFlags): Promise<Socket> {
  try {
    return await connectUnix(paths.socket);
  } catch {
    // none yet, or a dead one's socket: the master we start replaces it
  }
  let exited = false;
  void startMaster(device, flags).then(() => (exited = true));
  const deadline = Date.now() + MASTER_START_MS;
  for (;;) {
    try {
      return await connectUnix(paths.socket);
    } catch (err) {
      // A master that exited may have found another one listening: one more try, then give up.
      if (Date.now() > deadline || (exited && Date.now() > deadline - MASTER_START_MS + 2000)) {
        throw new CliError(`the forward master did not start (${(err as Error).message}); its log is ${paths.log}`, 'unreachable');
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

export async function forwardStdio(ctx: Context, device: string, specs: string[], flags: StdioFlags): Promise<number> {
  if (specs.length !== 1) throw usageError('--stdio takes one HOST:PORT: tether forward --stdio DEVICE HOST:PORT');
  if (flags.json) throw usageError('--json does not go with --stdio: stdout carries the connection');
  const target = parseTarget(specs[0]!);
  if (!target.ok) throw usageError(`${specs[0]}: ${target.problem}`);
  const { server, token } = credentials(ctx.env);
  const paths = masterPaths(ctx.env, server, token, device);
  const say = (line: string) => ctx.notice(`tether: ${line}`);
  // A master that is stopping (its last client just left) sends us to the next one.
  const deadline = Date.now() + MASTER_START_MS;
  for (;;) {
    let control: Socket;
    try {
      control = await reachMaster(paths, device, flags);
    } catch (err) {
      say((err as Error).message);
      return EXIT_LOST;
    }
    const code = await pipeThrough(control, paths, formatTarget(target.value), say);
    if (code !== 'again') return code;
    if (Date.now() > deadline) {
      say(`the forward master kept stopping; its log is ${paths.log}`);
      return EXIT_LOST;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Asks the master for the connection, and joins it to stdin and stdout until it ends: the exit
 * code, or 'again' when the master went away before it took the connection on.
 */
function pipeThrough(control: Socket, paths: MasterPaths, target: string, say: (line: string) => void): Promise<number | 'again'> {
  return new Promise<number | 'again'>((resolve) => {
    let data: Socket | undefined;
    let last: MasterLine | undefined;
    let remoteEnded = false;
    let lastWordTimer: NodeJS.Timeout | undefined;
    let over = false;
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

    const finish = (code: number | 'again', message?: string) => {
      if (over) return;
      over = true;
      if (message) say(message);
      clearTimeout(lastWordTimer);
      for (const s of signals) process.off(s, onSignal);
      process.stdin.unpipe();
      process.stdin.pause();
      data?.destroy();
      control.destroy();
      resolve(code);
    };
    const onSignal = () => finish(0);
    for (const s of signals) process.on(s, onSignal);

    /** The connection is over on our side: its outcome is the master's last word. */
    const settle = () => {
      if (!last || (last.type !== 'closed' && last.type !== 'error')) {
        if (!lastWordTimer) lastWordTimer = setTimeout(() => finish(EXIT_LOST, 'the forward master did not say how the connection ended'), LAST_WORD_MS);
        return;
      }
      if (last.type === 'error') return last.code === 'stopping' ? finish('again') : finish(exitFor(last.code), last.message);
      if (last.lost) return finish(EXIT_LOST, `the connection to ${target} was lost: ${last.reset ?? "the session's stream ended"}`);
      if (last.reset) return finish(1, `${target}: the connection ${last.reset}`);
      finish(0);
    };

    control.on('error', () => {});
    control.on('close', () => {
      if (last?.type === 'closed' || last?.type === 'error') settle();
      else if (!last) finish('again');
      else finish(EXIT_LOST, `the forward master went away (its log: ${paths.log})`);
    });
    readLines(control, masterLine, (line) => {
      if (!line) return void finish(EXIT_LOST, 'the forward master said something this tether does not understand');
      last = line;
      if (line.type === 'ready') attach(line.key);
      else if (line.type === 'error') settle();
      // A clean end settles once the bytes' end has come too.
      else if (line.type === 'closed' && (line.lost || line.reset || remoteEnded || !data)) settle();
    });
    sendLine(control, { type: 'hello', target });

    function attach(key: string): void {
      connectUnix(paths.socket).then(
        (socket) => {
          if (over) return void socket.destroy();
          data = socket;
          socket.on('error', () => {});
          sendLine(socket, { type: 'attach', key });
          process.stdin.on('error', () => socket.end());
          process.stdout.on('error', () => finish(1));
          process.stdin.pipe(socket); // stdin's end half-closes toward the device
          socket.pipe(process.stdout, { end: false });
          // What the device sent is flushed to stdout before the process exits (cmd/tether.ts).
          socket.on('end', () => {
            remoteEnded = true;
            socket.end();
            settle();
          });
          socket.on('close', () => {
            remoteEnded = true;
            settle();
          });
        },
        (err: Error) => finish(EXIT_LOST, `cannot reach the forward master: ${err.message}`),
      );
    }
  });
}
