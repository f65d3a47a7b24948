/**
 * @module `tether forward DEVICE [BIND_ADDR:]LOCAL_PORT:REMOTE_HOST:REMOTE_PORT [...]`: local TCP
 * ports that lead, through a port-forward session, to services on or near the device, as
 * `ssh -L` does. It listens first (a taken port fails before any session exists), opens the
 * session with every forward's target, then carries each accepted connection over the session's
 * stream (`shared/protocol/port-forward/`). A stream lost under it is dialled again while the session
 * lives; connections in flight are lost with it (./forward-tunnel). SIGINT or SIGTERM closes the
 * session and exits 0; the session closing or expiring under it exits 1, saying why. `--quiet`
 * leaves out the `forwarding …` lines; `--stdio` is ssh's ProxyCommand (./forward-stdio).
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Session } from '../../shared/api/sessions';
import { FORWARD_PROTOCOL_ERROR } from '../../shared/protocol/port-forward/protocol';
import { MAX_TARGETS } from '../../shared/protocol/port-forward/targets';
import { STREAM_CLOSE } from '../../shared/protocol/session-stream';
import type { Context } from '../context';
import { CliError, usageError } from '../errors';
import { explainClose } from '../explain-close';
import { parseForwardSpec, type ForwardSpec } from '../forward-spec';
import { printJson } from '../output';
import { closeSession, openSession } from '../sessions';
import { hostPort, Tunnel } from './forward-tunnel';

export interface ForwardFlags {
  ttl?: number;
  json?: boolean;
  replace?: boolean;
  waitOnline?: boolean;
  /** No `forwarding …` lines and no connection news; errors still print. */
  quiet?: boolean;
  /** `--stdio`: stdin and stdout are one connection to the one target (./forward-stdio). */
  stdio?: boolean;
  /** `--stdio`: seconds the master keeps the session after its last client (default 10). */
  persist?: number;
}

interface Listening {
  spec: ForwardSpec;
  server: Server;
  /** `host:port` as it listens (the port chosen when 0 was asked for). */
  address: string;
}

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
  if (flags.stdio) return (await import('./forward-stdio')).forwardStdio(ctx, device, specTexts, flags);
  if (flags.persist !== undefined) throw usageError('--persist goes with --stdio');
  const specs = specTexts.map(parseForwardSpec);
  const targets = [...new Set(specs.map((s) => s.target))];
  if (targets.length > MAX_TARGETS) throw usageError(`a session forwards to at most ${MAX_TARGETS} targets; ${targets.length} were given`);
  const onTerminal = process.stderr.isTTY === true && !flags.quiet;
  const say = (line: string) => ctx.notice(`tether: ${line}`);

  const listeners: Listening[] = [];
  let tunnel: Tunnel | undefined;
  const held: Array<{ socket: Socket; l: Listening }> = [];
  const carry = (t: Tunnel, socket: Socket, l: Listening) =>
    t.carry(socket, l.spec.target, `${hostPort(socket.remoteAddress ?? '?', socket.remotePort ?? 0)} to ${l.address}`);
  const accept = (socket: Socket, l: Listening) => (tunnel ? carry(tunnel, socket, l) : held.push({ socket, l }));
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
    for (const { socket, l } of held.splice(0)) carry(tunnel, socket, l);
    if (flags.json) printJson(ctx.out, { ...session, forwards: listeners.map((l) => ({ listen: l.address, target: l.spec.target })) });
    else if (!flags.quiet) for (const l of listeners) ctx.out.stdout(`forwarding ${l.address} -> ${device}:${l.spec.target}\n`);

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
