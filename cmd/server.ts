/**
 * @module The composition root of `tether server`: opens the store, builds the API and the
 * broker, wires them to each other through their ports, and serves both on one port. Owns every
 * long-lived resource and closes them in order on `stop()`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { createApi } from '../api/app';
import type { RelayPort } from '../api/ports';
import { simulatedRuntime } from '../api/deployments/simulated-runtime';
import { bootstrapAdmin } from '../api/identity/bootstrap';
import { openStore } from '../api/store/index';
import { createBroker } from '../broker/index';
import { createLogger, type Logger } from '../shared/log';
import { createMetrics } from '../shared/metrics';
import { guardProcess } from '../shared/process-guard';
import { createTicketer } from '../shared/tickets';
import type { ServerConfig } from './server-config';

export interface ServerOptions {
  /** Wall clock in ms; tests shift it to simulate downtime. */
  now?: () => number;
  log?: Logger;
  /** Where the start-up lines go (stdout by default). */
  print?: (line: string) => void;
  /** How long a stream waits for its device (10 s unless a test shortens it). */
  joinTimeoutMs?: number;
  /**
   * Install the process-wide last line of defence (`tether server` does; a server inside a
   * test runner does not, so the runner sees any escaped error itself).
   */
  guardProcess?: boolean;
}

export interface RunningServer {
  /** `http://host:port` as it listens. */
  url: string;
  port: number;
  /** Set when this start created the administrator account. */
  adminTokenFile: string | undefined;
  stop(): Promise<void>;
}

const iso = (ms: number) => new Date(ms).toISOString();
const hostForUrl = (host: string) => (host.includes(':') ? `[${host}]` : host);

export async function startServer(config: Readonly<ServerConfig>, options: ServerOptions = {}): Promise<RunningServer> {
  const now = options.now ?? Date.now;
  const log = options.log ?? createLogger({ level: config.log_level });
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));

  const store = openStore(config.data_dir);
  store.devices.markAllOffline(); // no agent is connected to a server that just started
  const metrics = createMetrics();
  const escaped = metrics.counter('tether_uncaught_errors_total', 'Errors that escaped every handler (a bug: please report it).');
  const unguard = options.guardProcess ? guardProcess(log, (kind) => escaped.inc({ kind })) : () => {};
  let listenedUrl = '';
  const publicUrl = () => config.publicUrl ?? listenedUrl;

  // The API reaches the broker only through this port; `broker` exists before any call comes.
  const relay: RelayPort = {
    sessionOpened: (s) => broker.sessionOpened(s),
    sessionClosed: (s) => broker.sessionClosed(s, s.close_reason ?? 'closed'),
    deviceDeleted: (id) => broker.deviceDeleted(id),
    tokenRevoked: (id) => broker.tokenRevoked(id),
  };
  const api = createApi({
    store,
    relay,
    log,
    metrics,
    ticketer: createTicketer(store.secret('stream-ticket')),
    wsBase: () => publicUrl().replace(/^http/, 'ws'),
    now,
    runtime: simulatedRuntime(config.sim_replica_ms), // the only runtime so far (TETHER_DEPLOY_RUNTIME)
  });
  const broker = createBroker({
    log: log.child({ component: 'broker' }),
    metrics,
    now,
    heartbeatMs: config.heartbeat_ms,
    authenticateAgent: (deviceId, token) => api.identity.deviceOfAgentToken(token) === deviceId,
    presence: {
      online: (id, version, at) => store.devices.markOnline(id, version, iso(at)),
      offline: (id, at) => store.devices.markOffline(id, iso(at)),
      seen: (lastSeen) => store.devices.markSeen(new Map([...lastSeen].map(([id, at]) => [id, iso(at)]))),
    },
    authorizeStream: api.authorizeStream,
    recordBytes: api.recordBytes,
    joinTimeoutMs: options.joinTimeoutMs,
  });

  let server: Server | undefined;
  let tokenFile: string | undefined;
  try {
    tokenFile = bootstrapAdmin(store, api.identity, config.data_dir, config.bootstrap_token, now);
    if (tokenFile) print(`created user admin (administrator); its token is in ${tokenFile}`);
    api.start();

    // Slow clients (slowloris) are cut off: headers within headers_timeout_ms, the whole request
    // within request_timeout_ms, checked every second (Node's default check is every 30 s).
    server = createServer({
      headersTimeout: config.headers_timeout_ms,
      requestTimeout: Math.max(config.request_timeout_ms, config.headers_timeout_ms),
      keepAliveTimeout: 5_000,
      connectionsCheckingInterval: Math.min(1_000, config.headers_timeout_ms),
    });
    server.on('request', api.callback());
    server.on('upgrade', (req, socket, head) => broker.handleUpgrade(req, socket, head));
    server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
      if (socket.writable) socket.end(api.parserRejection(err));
      else socket.destroy();
    });
    await listen(server, config.host, config.port);
  } catch (err) {
    await broker.close();
    api.shutdown();
    store.close();
    unguard();
    throw err;
  }

  const { port } = server.address() as AddressInfo;
  listenedUrl = `http://${hostForUrl(config.host)}:${port}`;
  log.info('server started', { url: listenedUrl, data_dir: config.data_dir, runtime: config.deploy_runtime });
  print(`tether listening on ${listenedUrl}`);

  let stopping: Promise<void> | undefined;
  const httpServer = server;
  return {
    url: listenedUrl,
    port,
    adminTokenFile: tokenFile,
    stop: () =>
      (stopping ??= (async () => {
        log.info('server stopping');
        const closed = new Promise<void>((resolve) => httpServer.close(() => resolve()));
        httpServer.closeIdleConnections();
        const sessionsClosed = api.shutdown();
        await broker.close();
        httpServer.closeAllConnections();
        await closed;
        store.close();
        unguard();
        log.info('server stopped', { sessions_closed: sessionsClosed });
      })()),
  };
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
