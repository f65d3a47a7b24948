/**
 * @module `tether forward DEVICE [BIND_ADDR:]LOCAL_PORT:REMOTE_HOST:REMOTE_PORT [...]`: local TCP
 * ports that lead, through a port-forward session, to services on or near the device, as
 * `ssh -L` does. It listens first (a taken port fails before any session exists), opens the
 * session with every forward's target, then carries each accepted connection over the session's
 * stream (`shared/protocol/port-forward/`). A stream lost under it is dialled again while the session
 * lives; connections in flight are lost with it. SIGINT or SIGTERM closes the session and exits
 * 0; the session closing or expiring under it exits 1, saying why.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Session } from '../../shared/api/sessions';
import { MAX_TARGETS } from '../../shared/protocol/port-forward/targets';
import { FORWARD_PROTOCOL_ERROR } from '../../shared/protocol/port-forward/protocol';
import { ForwardMux, type ConnectionReport } from '../../shared/protocol/port-forward/mux';
import { STREAM_CLOSE } from '../../shared/protocol/session-stream';
import type { WsClient } from '../../shared/websocket/client';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';
import { explainClose } from '../explain-close';
import { parseForwardSpec, type ForwardSpec } from '../forward-spec';
import { formatBytes, printJson } from '../output';
import { closeSession, openSession } from '../sessions';
import { connectSessionSocket } from '../stream';

export interface ForwardFlags {
  ttl?: number;
  json?: boolean;
  replace?: boolean;
  waitOnline?: boolean;
}

/** Stream bytes queued before the local sockets stop being read. */
const STREAM_HIGH_WATER = 4 * 1024 * 1024;
/** The waits between attempts to get a lost stream back. */
const RECONNECT_DELAYS_MS = [250, 1000, 2000, 5000, 10_000];
/** Close codes after which the session is over: nothing to reconnect to. */
const FINAL_CODES = new Set<number>([
  STREAM_CLOSE.sessionClosed,
  STREAM_CLOSE.sessionExpired,
  STREAM_CLOSE.unknownSession,
  STREAM_CLOSE.noCredentials,
  STREAM_CLOSE.busy,
  FORWARD_PROTOCOL_ERROR,
]);

interface Listening {
  spec: ForwardSpec;
  server: Server;
  /** `host:port` as it listens (the port chosen when 0 was asked for). */
  address: string;
}

const hostPort = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

function listen(spec: ForwardSpec, onConnection: (socket: Socket, l: Listening) => void): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const server = createServer({ allowHalfOpen: true, pauseOnConnect: true });
    const listening: Listening = { spec, server, address: '' };
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new CliError(
          `cannot listen on ${hostPort(spec.bindHost, spec.localPort)} for ${spec.text}: ${err.code === 'EADDRINUSE' ? 'the port is in use' : err.message}`,
          'local_port',
        ),
      ),
    );
    server.on('connection', (socket) => {
      socket.on('error', () => {}); // the mux sees the close that follows
      onConnection(socket, listening);
    });
    server.listen(spec.localPort, spec.bindHost, () => {
      server.removeAllListeners('error');
      server.on('error', () => {}); // accept errors (EMFILE) do not end the command
      const { port } = server.address() as { port: number };
      listening.address = hostPort(spec.bindHost, port);
      resolve(listening);
    });
  });
}

export async function forward(ctx: Context, device: string, specTexts: string[], flags: ForwardFlags): Promise<number> {
  const specs = specTexts.map(parseForwardSpec);
  const targets = [...new Set(specs.map((s) => s.target))];
  if (targets.length > MAX_TARGETS) throw usageError(`a session forwards to at most ${MAX_TARGETS} targets; ${targets.length} were given`);
  const onTerminal = process.stderr.isTTY === true;
  const say = (line: string) => ctx.notice(`tether: ${line}`);

  const listeners: Listening[] = [];
  let tunnel: Tunnel | undefined;
  const held: Array<{ socket: Socket; l: Listening }> = [];
  const accept = (socket: Socket, l: Listening) => (tunnel ? tunnel.carry(socket, l) : held.push({ socket, l }));
  try {
    for (const spec of specs) listeners.push(await listen(spec, accept));
  } catch (err) {
    for (const l of listeners) l.server.close();
    throw err;
  }
  const closeListeners = () => {
    for (const l of listeners) l.server.close();
  };

  const api = ctx.api();
  let session: Session;
  try {
    session = await openSession(api, { device, protocol: 'port-forward', targets, ...flags, notice: ctx.notice });
  } catch (err) {
    closeListeners();
    for (const { socket } of held) socket.destroy();
    throw err;
  }

  let stopping: NodeJS.Signals | undefined;
  let finished!: (outcome: { code: number; reason: string } | 'signal') => void;
  const done = new Promise<{ code: number; reason: string } | 'signal'>((resolve) => (finished = resolve));
  const onSignal = (signal: NodeJS.Signals) => {
    stopping ??= signal;
    finished('signal');
  };
  for (const s of ['SIGINT', 'SIGTERM'] as const) process.on(s, onSignal);

  let sessionOver = false;
  const dialing = new Tunnel(session.websocket_url!, {
    log: (line) => onTerminal && say(line),
    warn: say,
    ended: (code, reason) => finished({ code, reason }),
  });
  try {
    await dialing.connect();
    // Connections that came while the stream was being dialled were held; they go now.
    tunnel = dialing;
    for (const { socket, l } of held.splice(0)) tunnel.carry(socket, l);
    if (flags.json) printJson(ctx.out, { ...session, forwards: listeners.map((l) => ({ listen: l.address, target: l.spec.target })) });
    else for (const l of listeners) ctx.out.stdout(`forwarding ${l.address} -> ${device}:${l.spec.target}\n`);

    const outcome = await done;
    if (outcome === 'signal') return 0;
    sessionOver = outcome.code !== FORWARD_PROTOCOL_ERROR && outcome.code !== STREAM_CLOSE.busy;
    say(explainClose(outcome.code, outcome.reason));
    return 1;
  } finally {
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.off(s, onSignal);
    closeListeners();
    dialing.close();
    for (const { socket } of held.splice(0)) socket.destroy();
    if (!sessionOver) await closeSession(api, session.session_id).catch((err: Error) => say(`could not close the session: ${err.message}`));
  }
}

interface TunnelEvents {
  /** Routine news (a connection opened or closed), for a terminal. */
  log(line: string): void;
  /** What went wrong with a connection or the stream. */
  warn(line: string): void;
  /** The session's stream ended for good (the session closed, expired, or refused us). */
  ended(code: number, reason: string): void;
}

/** The session's stream and the connections it carries; dialled again when lost. */
class Tunnel {
  #ws: WsClient | undefined;
  #mux: ForwardMux | undefined;
  #nextId = 1;
  #closed = false;
  /** True while the stream's end cuts its connections: that is said once, by the stream. */
  #ending = false;
  #attempt = 0;
  #retry: NodeJS.Timeout | undefined;

  constructor(
    private readonly url: string,
    private readonly events: TunnelEvents,
  ) {}

  /** Connects the stream; rejects if the first attempt fails. */
  async connect(): Promise<void> {
    const ws = await connectSessionSocket(this.url);
    if (this.#closed) return ws.close(1000, 'client done');
    this.#attempt = 0;
    const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason })));
    const mux = new ForwardMux(
      {
        sendMessage: (message) => ws.send(JSON.stringify(message)),
        sendRecords: (parts) => ws.send(parts),
        get buffered() {
          return ws.bufferedAmount;
        },
      },
      {
        highWaterMark: STREAM_HIGH_WATER,
        onProtocolError: (why) => {
          this.events.warn(`the device broke the port-forward protocol (${why}); closing`);
          ws.close(FORWARD_PROTOCOL_ERROR, 'port-forward protocol error');
        },
        onOpened: (id, target) => this.events.log(`connection ${id} to ${target} open`),
        onClosed: (report) => this.#report(report),
      },
    );
    ws.on('text', (text) => mux.text(text));
    ws.on('binary', (chunk) => mux.binary(chunk));
    ws.on('drain', () => mux.drained());
    this.#ws = ws;
    this.#mux = mux;
    void closed.then(({ code, reason }) => {
      this.#endConnections(mux);
      this.#ws = undefined;
      this.#mux = undefined;
      if (this.#closed) return;
      if (FINAL_CODES.has(code)) return this.events.ended(code, reason);
      this.events.warn(`${explainClose(code, reason)}; connecting again (open connections were lost)`);
      this.#reconnectSoon();
    });
  }

  #reconnectSoon(): void {
    const delay = RECONNECT_DELAYS_MS[Math.min(this.#attempt++, RECONNECT_DELAYS_MS.length - 1)]!;
    this.#retry = setTimeout(() => {
      this.connect().catch((err: Error) => {
        if (this.#closed) return;
        this.events.warn(`${err.message}; trying again`);
        this.#reconnectSoon();
      });
    }, delay);
  }

  /** Carries one accepted connection to `l`'s target, or drops it while the stream is down. */
  carry(socket: Socket, l: Listening): void {
    const from = hostPort(socket.remoteAddress ?? '?', socket.remotePort ?? 0);
    if (!this.#mux) {
      this.events.warn(`connection from ${from} to ${l.address} dropped: the session's stream is down (reconnecting)`);
      return void socket.destroy();
    }
    const id = this.#nextId++;
    this.events.log(`connection ${id} from ${from} to ${l.address} -> ${l.spec.target}`);
    this.#mux.open(id, l.spec.target, socket);
  }

  /** Cuts every connection `mux` carries: the stream under them is gone. */
  #endConnections(mux: ForwardMux): void {
    this.#ending = true;
    try {
      mux.closeAll('the stream ended');
    } finally {
      this.#ending = false;
    }
  }

  #report(r: ConnectionReport): void {
    // A connection cut because the stream ended is said once, by the stream.
    if (this.#ending) return;
    const bytes = `${formatBytes(r.sent)} sent, ${formatBytes(r.received)} received`;
    if (!r.reset) return this.events.log(`connection ${r.id} to ${r.target} closed (${bytes})`);
    const { reason, by, message } = r.reset;
    const what =
      by === 'us'
        ? 'reset on this side'
        : reason === 'refused' || reason === 'unreachable' || reason === 'timed_out'
          ? 'failed on the device'
          : reason === 'not_allowed' || reason === 'limit'
            ? 'refused by the device'
            : 'reset by the device';
    const line = `connection ${r.id} to ${r.target} ${what}: ${reason}${message ? ` (${message})` : ''}; ${bytes}`;
    // The local application ending its own connection abruptly is routine; the rest is news.
    (by === 'us' && reason === 'closed' ? this.events.log : this.events.warn)(line);
  }

  /** Ends the stream and every connection; no reconnecting after this. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    if (this.#mux) this.#endConnections(this.#mux);
    this.#ws?.close(1000, 'client done');
  }
}
