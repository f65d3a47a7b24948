/**
 * @module The composition root of `tether broker`: an edge node of a cluster (docs/cluster.md).
 * It holds no database: it accepts agents' control channels and data streams and clients'
 * session streams, splices them locally, and asks the control node over NATS for everything a
 * database would say. Serves `/healthz`, `/readyz` and `/metrics`; every other HTTP request is
 * the control node's business (404 saying so).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRelay } from '../relay/index';
import { createBus, credsName, redactedUrl } from '../cluster/bus';
import { nodeIdOf } from '../shared/protocol/cluster';
import { createEdge } from '../cluster/edge';
import { randomBase32 } from '../shared/ids';
import { createLogger, type Logger } from '../shared/log';
import { createMetrics } from '../shared/metrics';
import { guardProcess } from './process-guard';
import { TETHER_VERSION } from '../shared/version';
import type { EdgeConfig } from './server-config';
import { listen } from './server-listen';

export interface EdgeNodeOptions {
  log?: Logger;
  print?: (line: string) => void;
  guardProcess?: boolean;
  /** How long a stream waits for its device (10 s unless a test shortens it). */
  joinTimeoutMs?: number;
}

export interface RunningEdgeNode {
  url: string;
  port: number;
  nodeId: string;
  stop(): Promise<void>;
}

const hostForUrl = (host: string) => (host.includes(':') ? `[${host}]` : host);

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

export async function startEdgeNode(config: Readonly<EdgeConfig>, options: EdgeNodeOptions = {}): Promise<RunningEdgeNode> {
  // The name the bus knows this node by: its credentials', or made up on an open (loopback) bus.
  const nodeName = (config.natsCreds !== undefined ? credsName(config.natsCreds) : undefined) ?? `edge-${randomBase32(8)}`;
  const nodeId = nodeIdOf(nodeName, randomBase32(8));
  const log = (options.log ?? createLogger({ level: config.log_level })).child({ node_id: nodeId });
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const metrics = createMetrics();
  const escaped = metrics.counter('tether_uncaught_errors_total', 'Errors that escaped every handler (a bug: please report it).');
  const unguard = options.guardProcess ? guardProcess(log, (kind) => escaped.inc({ kind })) : () => {};

  const server = createServer({
    headersTimeout: config.headers_timeout_ms,
    requestTimeout: Math.max(config.request_timeout_ms, config.headers_timeout_ms),
    keepAliveTimeout: 5_000,
    connectionsCheckingInterval: Math.min(1_000, config.headers_timeout_ms),
  });
  await listen(server, config.host, config.port, `${hostForUrl(config.host)}:${config.port}`);
  const { port } = server.address() as AddressInfo;
  const url = `http://${hostForUrl(config.host)}:${port}`;

  const clusterLog = log.child({ component: 'cluster' });
  const bus = createBus({
    url: config.natsUrl,
    credsFile: config.natsCreds,
    nodeName,
    name: `tether-${nodeId}`,
    log: clusterLog,
    onUp: () => edge.busUp(),
    onDown: () => edge.busDown(),
  });
  const edge = createEdge({ bus, nodeName, nodeId, publicUrl: config.publicUrl, heartbeatMs: config.heartbeat_ms, log: clusterLog, metrics });
  const relayServer = createRelay({
    log: log.child({ component: 'relay' }),
    metrics,
    now: Date.now,
    heartbeatMs: config.heartbeat_ms,
    joinTimeoutMs: options.joinTimeoutMs,
    allowedOrigins: config.console_origins,
    publicUrl: config.publicUrl,
    warningsS: config.session_warnings,
    ...edge.relayDeps,
  });
  metrics.gauge('tether_cluster_bus_up', '1 while this node is connected to NATS.', () => (bus.up() ? 1 : 0));

  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/healthz') {
      return json(res, 200, { status: 'ok', role: 'edge', node_id: nodeId, version: TETHER_VERSION, nats: bus.up() ? 'connected' : 'disconnected' });
    }
    if (req.method === 'GET' && path === '/readyz') {
      const ready = bus.up();
      return json(res, ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', nats: ready ? 'connected' : 'disconnected' });
    }
    if (req.method === 'GET' && path === '/metrics') {
      void metrics.render().then((text) => {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
        res.end(text);
      });
      return;
    }
    json(res, 404, {
      error: 'not_found',
      message: 'this is a tether broker node: it serves agents and session streams; the API is on the control node (tether server)',
      status: 404,
    });
  });
  server.on('clientError', (_err, socket) => socket.destroy());
  server.on('upgrade', (req, socket, head) => relayServer.handleUpgrade(req, socket, head));
  edge.start(relayServer);

  log.info('edge node started', { url, public_url: config.publicUrl, nats_url: redactedUrl(config.natsUrl) });
  print(`tether broker listening on ${url}`);
  print(`node id ${nodeId}`);

  let stopping: Promise<void> | undefined;
  return {
    url,
    port,
    nodeId,
    stop: () =>
      (stopping ??= (async () => {
        log.info('broker node stopping');
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        server.closeIdleConnections();
        edge.leaving();
        await relayServer.close();
        await edge.close();
        server.closeAllConnections();
        await closed;
        unguard();
        log.info('broker node stopped');
      })()),
  };
}
