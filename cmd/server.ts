/**
 * @module The composition root of `tether server`: binds the port first (a taken port stops it
 * before anything is written), then opens the store, builds the API and the relay, wires them
 * to each other through their interfaces (the relay, shared/relay/events.ts; what the relay reports to
 * the API), and serves both on that port. Owns every long-lived
 * resource and closes them in order on `stop()`.
 */
import { createServer, type Server } from 'node:http';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo, Socket } from 'node:net';
import { createApi, type Api } from '../api/app';
import { bootstrapAdmin } from '../api/identity/bootstrap';
import { openStore, type Store } from '../api/store/index';
import { createRelay } from '../relay/index';
import { createBus, redactedUrl } from '../cluster/bus';
import { createControl, type Control } from '../cluster/control';
import { CONTROL_NAME, nodeIdOf } from '../shared/protocol/cluster';
import { randomBase32 } from '../shared/ids';
import { createLogger, type Logger } from '../shared/log';
import { createMetrics, type Metrics } from '../shared/metrics';
import { guardProcess } from './process-guard';
import { createTicketer } from '../shared/auth/tickets';
import type { ServerConfig } from './server-config';
import { holdRequests, listen } from './server-listen';
import { runtimeOf } from './deploy-runtimes';
import { agentAuthenticator, openSessionOf } from './store-checks';
import { createPeer, isPeer } from './peer-node';
import { electLeader } from '../api/store/leadership';
import type { StreamGrant } from '../shared/protocol/session-stream';

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

const hostForUrl = (host: string) => (host.includes(':') ? `[${host}]` : host);

/** Slow clients (slowloris) are cut off: headers and whole requests have deadlines. */
function createHttpServer(config: Readonly<ServerConfig>): Server {
  return createServer({
    headersTimeout: config.headers_timeout_ms,
    requestTimeout: Math.max(config.request_timeout_ms, config.headers_timeout_ms),
    keepAliveTimeout: 5_000,
    // checked every second (Node's default check is every 30 s)
    connectionsCheckingInterval: Math.min(1_000, config.headers_timeout_ms),
  });
}

/** The built web console: beside the bundle (`dist/console`), or under dist/ when run from the sources (tests). */
function consoleDir(): string | undefined {
  return [join(__dirname, 'console'), join(__dirname, '..', 'dist', 'console')].find((dir) => existsSync(join(dir, 'index.html')));
}

interface WireDeps {
  now: () => number;
  log: Logger;
  metrics: Metrics;
  publicUrl: () => string;
  joinTimeoutMs: number | undefined;
}

/**
 * The API and the relay, each reaching the other only through interfaces of its own: the API
 * tells the relay (shared/relay/events.ts: the relay, or in a cluster the control node, which tells
 * every node), and the relay reports to the API through `apiForRelay`.
 */
function wire(store: Store, config: Readonly<ServerConfig>, deps: WireDeps, ticketKey: Buffer) {
  const { now, log, metrics } = deps;
  let api: Api | undefined;
  // The relay and the control node exist before the API that they report to, and call it only
  // once agents and clients connect (the server listens after wiring).
  const apiSide = apiForRelay(() => api!);
  // On PostgreSQL with a bus, a peer among peers (docs/peers.md); with the control node's
  // credentials (or on SQLite with a bus), a cluster's control node: the relay reaches every node,
  // presence goes through the table of which node holds which agent (docs/cluster.md).
  const peer = isPeer(config.natsUrl, config.natsCreds, config.database_url)
    ? createPeer({ natsUrl: config.natsUrl!, natsCreds: config.natsCreds }, log, metrics)
    : undefined;
  const control = config.natsUrl === undefined || peer ? undefined : controlNode(store, config, deps, apiSide);
  const run = peer?.run ?? nodeIdOf(control ? CONTROL_NAME : 'server', randomBase32(8));
  const relayServer = createRelay({
    log: log.child({ component: 'relay' }),
    metrics,
    now,
    heartbeatMs: config.heartbeat_ms,
    authenticateAgent: agentAuthenticator(store),
    presence: control?.presence ?? apiSide.presence,
    authorizeStream: apiSide.authorizeStream,
    recordBytes: apiSide.recordBytes,
    joinTimeoutMs: deps.joinTimeoutMs,
    recordings: apiSide.recordings,
    allowedOrigins: config.console_origins,
    publicUrl: deps.publicUrl(),
    streamClients: apiSide.streamClients,
    warningsS: config.session_warnings,
    routeStream: control?.routeStream,
    onStreamRefusedElsewhere: control?.onStreamRefusedElsewhere,
    // Jobs run on the agents connected to this node's own relay (a cluster's edges get none yet).
    jobs: apiSide.jobs,
  });
  api = createApi({
    store,
    relay: peer?.relay ?? control?.relay ?? relayServer,
    node: { run, url: deps.publicUrl() },
    peers: peer?.publisher,
    busUp: peer?.up,
    agentJobs: { send: (deviceId, generation, msg) => relayServer.sendJobMessage(deviceId, generation, msg) },
    leadership: config.database_url === undefined ? undefined : electLeader(config.database_url, log.child({ component: 'housekeeping' })),
    log,
    metrics,
    ticketer: createTicketer(ticketKey),
    wsBase: () => deps.publicUrl().replace(/^http/, 'ws'),
    now,
    runtime: runtimeOf(config),
    consoleDir: consoleDir(),
    sessionIdleSeconds: config.session_idle_seconds,
    accessRequestTtlSeconds: config.access_request_ttl_seconds,
    sessionWarningsS: config.session_warnings,
    recordings: {
      dir: join(config.data_dir, 'recordings'),
      recordShell: config.record_shell,
      recordInput: config.record_input,
      maxStoredBytes: config.recording_max_bytes,
      retentionDays: config.recording_retention_days,
      maxTotalBytes: config.recordings_max_total_bytes,
      minFreeBytes: config.recordings_min_free_bytes,
    },
  });
  return { api, relayServer, control, peer };
}

/** What the relay side (the relay; in a cluster, the control node for every node) reports to and asks of the API, which exists once `api()` is called. */
function apiForRelay(api: () => Api) {
  return {
    authorizeStream: (sessionId: string, credentials: Parameters<Api['authorizeStream']>[1]) => api().authorizeStream(sessionId, credentials),
    recordBytes: (counts: Map<string, { toDevice: number; fromDevice: number }>) => api().recordBytes(counts),
    recordings: { start: (grant: StreamGrant, streamId: string) => api().recordings.start(grant, streamId) },
    streamClients: {
      attached: (sessionId: string) => api().streamClients.attached(sessionId),
      detached: (sessionId: string) => api().streamClients.detached(sessionId),
    },
    jobs: {
      message: (...m: Parameters<Api['jobs']['message']>) => api().jobs.message(...m),
      gone: (deviceId: string, generation: number) => api().jobs.gone(deviceId, generation),
    },
    presence: {
      online: (...change: Parameters<Api['presence']['online']>) => api().presence.online(...change),
      offline: (...change: Parameters<Api['presence']['offline']>) => api().presence.offline(...change),
      apply: (changes: Parameters<Api['presence']['apply']>[0]) => api().presence.apply(changes),
      onlineIds: () => api().presence.onlineIds(),
      seen: (lastSeen: Map<string, number>) => api().presence.seen(lastSeen),
    },
  };
}

/** The control node of a cluster: answers the edges from the API. */
function controlNode(store: Store, config: Readonly<ServerConfig>, deps: WireDeps, api: ReturnType<typeof apiForRelay>): Control {
  const run = nodeIdOf(CONTROL_NAME, randomBase32(8));
  const log = deps.log.child({ component: 'cluster', node_id: run });
  const bus = createBus({
    url: config.natsUrl!,
    credsFile: config.natsCreds,
    nodeName: CONTROL_NAME,
    name: `tether-${run}`,
    log,
    onUp: () => control.busUp(),
    onDown: () => control.busDown(),
  });
  const control = createControl({
    bus,
    run,
    publicUrl: deps.publicUrl(),
    heartbeatMs: config.heartbeat_ms,
    log,
    metrics: deps.metrics,
    now: deps.now,
    api: {
      ...api,
      agentKey: (deviceId) => store.devices.tokenHash(deviceId),
      agentKeys: (deviceIds) => store.devices.tokenHashes(deviceIds),
      openSession: (sessionId) => openSessionOf(store, deps.now, sessionId),
    },
  });
  log.info('this server is the control node of a cluster', { nats_url: redactedUrl(config.natsUrl!) });
  return control;
}

export async function startServer(config: Readonly<ServerConfig>, options: ServerOptions = {}): Promise<RunningServer> {
  const now = options.now ?? Date.now;
  const log = options.log ?? createLogger({ level: config.log_level });
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));

  const server = createHttpServer(config);
  const held = holdRequests(server);
  await listen(server, config.host, config.port, `${hostForUrl(config.host)}:${config.port}`);
  const { port } = server.address() as AddressInfo;
  const url = `http://${hostForUrl(config.host)}:${port}`;

  let store: Store | undefined;
  let parts: ReturnType<typeof wire> | undefined;
  let unguard = () => {};
  let tokenFile: string | undefined;
  try {
    store = await openStore({ dataDir: config.data_dir, databaseUrl: config.database_url });
    // No agent is connected to a server that just started; a cluster's control node learns from
    // the edges which ones still are (the rest go offline after the heartbeat deadline).
    if (config.natsUrl === undefined) await store.devices.markAllOffline();
    const metrics = createMetrics();
    const escaped = metrics.counter('tether_uncaught_errors_total', 'Errors that escaped every handler (a bug: please report it).');
    if (options.guardProcess) unguard = guardProcess(log, (kind) => escaped.inc({ kind }));
    const deps = { now, log, metrics, publicUrl: () => config.publicUrl ?? url, joinTimeoutMs: options.joinTimeoutMs };
    const { api, relayServer, control, peer } = (parts = wire(store, config, deps, await store.secret('stream-ticket')));
    tokenFile = await bootstrapAdmin(store, config.data_dir, config.bootstrap_token, now);
    if (tokenFile) print(`created user admin (administrator); its token is in ${tokenFile}`);
    await api.start();
    server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
      if (socket.writable) socket.end(api.parserRejection(err));
      else socket.destroy();
    });
    held.ready(api.callback(), (req, socket, head) => relayServer.handleUpgrade(req, socket, head));
    control?.start(relayServer);
    peer?.start(relayServer, api);
  } catch (err) {
    held.fail();
    await closeHttp(server);
    await parts?.relayServer.close();
    await parts?.control?.close();
    await parts?.peer?.close();
    await parts?.api.shutdown().catch(() => 0);
    await parts?.api.drain();
    await store?.close();
    unguard();
    throw err;
  }

  log.info('server started', { url, data_dir: config.data_dir, runtimes: config.runtimes });
  print(`tether listening on ${url}`);
  return {
    url,
    port,
    adminTokenFile: tokenFile,
    stop: stopOnce(server, parts, store, log, unguard),
  };
}

function closeHttp(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return closed;
}

/** `stop()`: no new connections, sessions closed, agents told, then the database closed. */
function stopOnce(server: Server, parts: ReturnType<typeof wire>, store: Store, log: Logger, unguard: () => void): () => Promise<void> {
  const { api, relayServer, control, peer } = parts;
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      log.info('server stopping');
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const sessionsClosed = await api.shutdown().catch((err: unknown) => {
        log.error('could not close the open sessions', { err: (err as Error).message });
        return 0;
      });
      await relayServer.close();
      await control?.close(); // the last presence written, the bus closed
      await peer?.close();
      server.closeAllConnections();
      await closed;
      await api.drain();
      await store.close();
      unguard();
      log.info('server stopped', { sessions_closed: sessionsClosed });
    })());
}
