/**
 * @module The master of `tether forward --stdio` (hidden command `tether forward-master DEVICE`),
 * as ssh's ControlMaster is to ssh: a detached process that holds the one port-forward session a
 * user may have on a device, and carries every `--stdio` process's connection over its stream
 * (the server allows one open session per device and protocol, and one client per stream; the
 * stream multiplexes connections). It listens on a private Unix socket (./forward-socket), opens
 * the session when the first client asks (with that client's target; a later target is added by
 * reopening the session while no connection uses it), and closes the session and exits once no
 * client has been connected for `--persist` seconds, or when the session ends. It writes what
 * happens to its log file beside its socket; it has no terminal.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { MAX_TARGETS, formatTarget, parseTarget } from '../../shared/protocol/port-forward/targets';
import { credentials } from '../config';
import { createContext, type Context } from '../context';
import { CliError } from '../errors';
import { explainClose } from '../explain-close';
import { closeSession, openSession } from '../sessions';
import { clientLine, readLines, sendLine } from './forward-control';
import { inodeOf, listenAsMaster, masterPaths } from './forward-socket';
import { resetWords, Tunnel } from './forward-tunnel';

export interface MasterFlags {
  /** Seconds to keep the session after the last client left. */
  persist: number;
  ttl?: number | undefined;
  replace?: boolean | undefined;
  waitOnline?: boolean | undefined;
}

/** How long a client has to send its first line, and to attach once told to. */
const HANDSHAKE_MS = 10_000;

interface Held {
  sessionId: string;
  targets: string[];
  tunnel: Tunnel;
}

/** One client's connection: its control socket, and its data socket once attached. */
interface Client {
  control: Socket;
  target: string;
  data?: Socket;
  id?: number;
  /** Told its last line (`closed` or `error`). */
  told?: boolean;
}

export async function forwardMaster(ctx: Context, device: string, flags: MasterFlags): Promise<number> {
  const { server, token } = credentials(ctx.env);
  const paths = masterPaths(ctx.env, server, token, device);
  // Lines wait in memory until this master wins the socket: a loser must not wipe the winner's log.
  let held: string[] | undefined = [];
  const log = (line: string) => {
    const stamped = `${new Date().toISOString()} ${line}\n`;
    if (held) held.push(stamped);
    else appendFileSync(paths.log, stamped);
  };
  const quietCtx = createContext(ctx.env, { stdout: (t) => log(t.trimEnd()), stderr: (t) => log(t.trimEnd()) });
  const master = new Master(quietCtx, device, flags, log);
  const listener = await listenAsMaster(paths, (s) => master.accept(s));
  if (!listener) return 0; // another master answers there
  writeFileSync(paths.log, held.join(''), { mode: 0o600 });
  held = undefined;
  listener.on('error', (err) => log(`listener: ${err.message}`));
  const inode = inodeOf(paths.socket);
  log(`master ${process.pid} for ${device} listening on ${paths.socket} (persist ${flags.persist} s)`);
  const onSignal = (signal: NodeJS.Signals) => master.stop(`${signal}`);
  for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onSignal);
  // The process that started us connects within its own deadline for that (HANDSHAKE_MS too).
  master.idle(Math.max(flags.persist, HANDSHAKE_MS / 1000));
  try {
    await master.done;
  } finally {
    listener.close();
    // Removed only while it is still ours: a master that lost a start-up race must not take the winner's.
    if (inodeOf(paths.socket) === inode) rmSync(paths.socket, { force: true });
    log('master exits');
  }
  return 0;
}

class Master {
  readonly #clients = new Set<Client>();
  /** Clients told `ready`, by the key their data connection attaches with. */
  readonly #waiting = new Map<string, Client>();
  /** Attached clients by connection id. */
  readonly #conns = new Map<number, Client>();
  #held: Held | undefined;
  /** Session opens and closes, one at a time. */
  #chain: Promise<unknown> = Promise.resolve();
  #persistTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #finish!: () => void;
  readonly done = new Promise<void>((resolve) => (this.#finish = resolve));

  constructor(
    private readonly ctx: Context,
    private readonly device: string,
    private readonly flags: MasterFlags,
    private readonly log: (line: string) => void,
  ) {}

  /** A new connection on the socket: a control (`hello`) or a data (`attach`) one. */
  accept(socket: Socket): void {
    socket.on('error', () => {}); // 'close' follows
    const timer = setTimeout(() => socket.destroy(), HANDSHAKE_MS);
    socket.once('close', () => clearTimeout(timer));
    readLines(socket, clientLine, (line) => {
      clearTimeout(timer);
      if (!line) socket.destroy();
      else if (line.type === 'hello') this.#hello(socket, line.target);
      else this.#attach(socket, line.key);
      return 'stop';
    });
  }

  /** No client: the session goes after the persist time (at start, the time the first client has to come). */
  idle(seconds = this.flags.persist): void {
    if (this.#clients.size > 0 || this.#stopped) return;
    clearTimeout(this.#persistTimer);
    this.#persistTimer = setTimeout(() => this.stop(`no client for ${seconds} s`), seconds * 1000);
  }

  #hello(control: Socket, targetText: string): void {
    const client: Client = { control, target: targetText };
    this.#clients.add(client);
    clearTimeout(this.#persistTimer);
    control.on('close', () => this.#gone(client));
    // The client tries again, with the next master (once this one's session is closed).
    if (this.#stopped) return this.#fail(client, 'stopping', 'this master is stopping');
    const target = parseTarget(targetText);
    if (!target.ok) return this.#fail(client, 'usage', target.problem);
    client.target = formatTarget(target.value);
    this.#ensure(client.target).then(
      () => {
        if (control.destroyed) return;
        const key = randomBytes(16).toString('hex');
        this.#waiting.set(key, client);
        setTimeout(() => this.#waiting.delete(key), HANDSHAKE_MS).unref();
        sendLine(control, { type: 'ready', key });
      },
      (err: Error) => this.#fail(client, err instanceof CliError ? err.code : 'error', err.message),
    );
  }

  #attach(data: Socket, key: string): void {
    const client = this.#waiting.get(key);
    this.#waiting.delete(key);
    const tunnel = this.#held?.tunnel;
    if (!client || client.control.destroyed) return void data.destroy();
    if (!tunnel?.up) {
      data.destroy();
      return this.#fail(client, 'unreachable', "the session's stream is down (reconnecting); try again");
    }
    client.data = data;
    const id = tunnel.carry(data, client.target, `client ${this.#clients.size}`);
    if (id === undefined) return this.#fail(client, 'unreachable', "the session's stream is down; try again");
    client.id = id;
    this.#conns.set(id, client);
  }

  /** A client's control connection closed: its data connection goes too. */
  #gone(client: Client): void {
    this.#clients.delete(client);
    client.data?.destroy();
    this.idle();
  }

  #fail(client: Client, code: string, message: string): void {
    this.log(`refused a client: ${message}`);
    if (!client.told && !client.control.destroyed) {
      client.told = true;
      sendLine(client.control, { type: 'error', code, message });
      client.control.end();
    }
  }

  /** The session carries `target`, opened (or reopened with it added) when it does not. */
  #ensure(target: string): Promise<void> {
    const run = this.#chain.then(() => this.#ensureNow(target));
    this.#chain = run.catch(() => {});
    return run;
  }

  async #ensureNow(target: string): Promise<void> {
    const held = this.#held;
    if (held?.targets.includes(target)) return;
    if (held) {
      const busy = this.#conns.size + this.#waiting.size;
      if (busy > 0 || held.targets.length >= MAX_TARGETS) {
        throw new CliError(
          `the session that tether holds for ssh-style connections to ${this.device} carries ${held.targets.join(', ')}; ` +
            (busy > 0 ? `${target} can be added once its ${busy} connection(s) have ended` : `it has ${MAX_TARGETS} targets already`),
          'busy',
        );
      }
      this.log(`reopening the session to add ${target}`);
      await this.#release();
    }
    const targets = [...(held?.targets ?? []), target];
    const api = this.ctx.api();
    const session = await openSession(api, { device: this.device, protocol: 'port-forward', targets, ...this.#openFlags(), notice: this.log });
    const tunnel = new Tunnel(session.websocket_url!, {
      log: this.log,
      warn: this.log,
      ended: (code, reason) => this.#ended(code, reason),
      opened: (id) => {
        const c = this.#conns.get(id);
        if (c) sendLine(c.control, { type: 'opened' });
      },
      closed: (report, lost) => {
        const c = this.#conns.get(report.id);
        this.#conns.delete(report.id);
        if (!c || c.told || c.control.destroyed) return;
        c.told = true;
        const reset = report.reset && `${resetWords(report.reset)}: ${report.reset.reason}${report.reset.message ? ` (${report.reset.message})` : ''}`;
        if (lost) sendLine(c.control, { type: 'closed', lost: true, reset: tunnel.lastEnd ?? 'the stream ended' });
        else sendLine(c.control, { type: 'closed', ...(reset ? { reset } : {}) });
        c.control.end();
      },
    });
    try {
      await tunnel.connect();
    } catch (err) {
      tunnel.close();
      await closeSession(api, session.session_id).catch(() => {});
      throw err;
    }
    this.#held = { sessionId: session.session_id, targets, tunnel };
    this.log(`session ${session.session_id} open for ${targets.join(', ')}`);
  }

  #openFlags() {
    return { ttl: this.flags.ttl, replace: this.flags.replace, waitOnline: this.flags.waitOnline };
  }

  /** The session ended under us (closed, expired, refused): every client is told, and we go. */
  #ended(code: number, reason: string): void {
    const why = explainClose(code, reason);
    this.log(`the session's stream ended: ${why}`);
    this.#held = undefined;
    for (const c of this.#clients) this.#fail(c, 'stream_closed', why);
    this.stop('the session ended');
  }

  /** Closes the session we hold, if any. */
  async #release(): Promise<void> {
    const held = this.#held;
    this.#held = undefined;
    if (!held) return;
    held.tunnel.close();
    await closeSession(this.ctx.api(), held.sessionId).then(
      () => this.log(`session ${held.sessionId} closed`),
      (err: Error) => this.log(`could not close session ${held.sessionId}: ${err.message}`),
    );
  }

  /** Ends every client, closes the session, and lets the process go. */
  stop(why: string): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.log(`stopping: ${why}`);
    clearTimeout(this.#persistTimer);
    for (const c of this.#clients) {
      c.data?.destroy();
      c.control.destroy();
    }
    void this.#chain.then(() => this.#release()).finally(() => this.#finish());
  }
}
