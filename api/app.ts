/**
 * @module The operator API as a Koa application built from its dependencies. It does not
 * listen: the composition root mounts `callback()` on the server it owns (fastify's build vs
 * listen), and calls `start()` / `shutdown()` around it.
 */
import Koa from 'koa';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { Ticketer } from '../shared/auth/tickets';
import { createTokenResolver } from './identity/token-cache';
import { errorHandler, parserRejection } from './http/error-handler';
import { requestId } from './http/request-id';
import type { Relay } from './relay';
import { createAccounts } from './identity/accounts';
import { createIdentity } from './identity/identity';
import { createSessions } from './sessions/sessions';
import { createStreamAccess } from './sessions/stream-access';
import { createServices } from './services/services';
import type { RuntimeFactory } from './services/runtime';
import type { Store } from './store/index';
import { ABANDONED_CLAIM_MS } from './store/idempotency';
import { createRecorder, type RecorderSettings } from './recordings/recorder';
import { createEventHub, type TetherEvent } from './events/hub';
import type { SessionRow } from './store/sessions';
import { createPresence } from './devices/presence';
import { createHousekeeping, type ThisNode } from './housekeeping';
import { soleLeader, type Leadership } from './store/leadership';
import { peerInbox } from './peer-inbox';
import { mountRoutes } from './routes';
import { createDispatcher } from './jobs/dispatcher';
import { createWebhookSender } from './webhooks/sender';
import type { RelayToAgentMessage } from '../shared/protocol/control-channel';

export interface ApiDeps {
  store: Store;
  relay: Relay;
  log: Logger;
  metrics: Metrics;
  ticketer: Ticketer;
  /** Base of `websocket_url`, e.g. `ws://127.0.0.1:8080` (known once the server listens). */
  wsBase: () => string;
  now: () => number;
  /** Builds the deployment runtime, given where it reports to. */
  runtime: RuntimeFactory;
  /** Where and how shell sessions are recorded. */
  recordings: RecorderSettings;
  /** The built web console, served at `/`; none: `/` says how to build it. */
  consoleDir?: string | undefined;
  /** A session with no client connected this long (s) closes `idle` (TETHER_SESSION_IDLE_SECONDS; default 300). */
  sessionIdleSeconds?: number | undefined;
  /** How long an access request stays pending (s) before it ends `expired` (TETHER_ACCESS_REQUEST_TTL_SECONDS; default 86400). */
  accessRequestTtlSeconds?: number | undefined;
  /** Seconds before a session's end at which `session.expiring` is published (TETHER_SESSION_WARNINGS; default 300 and 60). */
  sessionWarningsS?: readonly number[] | undefined;
  /** This node: its run id and the URL clients reach it at (a device's presence names the node that holds its agent). */
  node: ThisNode;
  /** What this peer tells the others (docs/peers.md); none: one process, which owns every session. */
  peers?: PeerPublisher | undefined;
  /** Who does the housekeeping; none: this process (SQLite). */
  leadership?: Leadership | undefined;
  /** Whether the bus is connected, for `/readyz` (a peer's, or a cluster's control node); none: no bus. */
  busUp?: (() => boolean) | undefined;
  /** Sends job messages to the agents connected to this node (the relay here); none: no job starts here. */
  agentJobs?: { send(deviceId: string, generation: number, msg: RelayToAgentMessage): boolean } | undefined;
}

/** What a peer publishes to the others (cluster/peers.ts carries it). */
export interface PeerPublisher {
  event(e: TetherEvent): void;
  identity(tokens: readonly string[], users: readonly string[]): void;
  streams(attached: readonly string[], detached: readonly string[]): void;
}

export function createApi(deps: ApiDeps) {
  const { store, relay, log, metrics, now } = deps;
  const tokens = createTokenResolver(store.tokens);
  const identity = createIdentity(store, now);
  // A token cut off (revoked, or its user disabled or deleted) stops at once: its cache entry,
  // the sessions it opened (and their tickets), and the streams it admitted on other sessions.
  const accounts = createAccounts(store, now, {
    userChanged(username) {
      tokens.userChanged(username);
      deps.peers?.identity([], [username]);
    },
    async cutOff(tokenIds, reason) {
      deps.peers?.identity(tokenIds, []);
      for (const tokenId of tokenIds) {
        tokens.revoked(tokenId);
        // Streams joined with the token close first, with 4401 (CONTRACT 9); closing the sessions
        // afterwards would end them with 4000 (session closed) instead.
        relay.tokenRevoked(tokenId);
        http.tokenRevoked(tokenId);
        await sessions.closeAllOfToken(tokenId, reason);
      }
    },
  });
  const leadership = deps.leadership ?? soleLeader;
  const recordingSettings = { ...deps.recordings, leads: () => leadership.leads() };
  const recorder = createRecorder(store, recordingSettings, log.child({ component: 'recordings' }), now, metrics);
  const events = createEventHub();
  if (deps.peers) events.forwardLocal((e) => deps.peers!.event(e));
  const sessionEvent = (event: 'session.opened' | 'session.closed', s: SessionRow) =>
    events.publish({
      event,
      data: {
        session_id: s.session_id,
        device_id: s.device_id,
        protocol: s.protocol,
        opened_by: s.opened_by,
        at: event === 'session.opened' ? s.opened_at : (s.closed_at ?? new Date(now()).toISOString()),
        ...(event === 'session.closed' && { close_reason: s.close_reason }),
      },
    });
  // A session's recording is finished when the session closes (its streams end first); both
  // changes go out as events.
  const sessionRelay: Relay = {
    ...relay,
    sessionOpened(session) {
      relay.sessionOpened(session);
      sessionEvent('session.opened', session);
    },
    async sessionClosed(session) {
      const counted = relay.sessionClosed(session);
      recorder.sessionClosed(session.session_id);
      sessionEvent('session.closed', session);
      await counted;
    },
  };
  const sessions = createSessions({
    store,
    relay: sessionRelay,
    log: log.child({ component: 'sessions' }),
    now,
    idleSeconds: deps.sessionIdleSeconds,
    shared: deps.peers !== undefined,
    warningsS: deps.sessionWarningsS,
    // Every peer watches; the one that leads tells, so each warning is published once.
    leads: () => leadership.leads(),
    expiring: (data) => events.publish({ event: 'session.expiring', data }),
  });
  const housekeeping = createHousekeeping({
    store,
    leadership,
    node: deps.node,
    log: log.child({ component: 'housekeeping' }),
    now,
    agentsLost: (deviceIds, at) => deviceIds.forEach((device_id) => events.publish({ event: 'agent.offline', data: { device_id, at } })),
    // Pending access requests expire and grants end by time, on the leader's beat.
    events,
  });
  // The runtime reports to the deployment service, which exists once the runtime does.
  const runtime = deps.runtime((report) => void services.onReport(report), log.child({ component: 'runtime' }));
  const services = createServices({ store, runtime, log: log.child({ component: 'services' }), now });
  const dispatcher = createDispatcher({
    store,
    log: log.child({ component: 'jobs' }),
    metrics,
    now,
    node: deps.node.run,
    events,
    leads: () => leadership.leads(),
    send: (deviceId, generation, msg) => deps.agentJobs?.send(deviceId, generation, msg) ?? false,
  });
  // Webhook deliveries go out from every peer; leases in the outbox keep each to one sender.
  const webhooks = createWebhookSender({ store, log: log.child({ component: 'webhooks' }), metrics, now });
  const requests = metrics.counter(
    'tether_http_requests_total',
    'HTTP requests by method, route and status; 499: the client closed the connection before its request was complete.',
  );
  metrics.gauge('tether_sessions_open', 'Remote-access sessions currently open.', () => store.sessions.openCount());

  const app = new Koa();
  app.silent = true; // errors are rendered and logged by errorHandler, never printed by Koa
  app.use(requestId());
  app.use(errorHandler(log.child({ component: 'http' }), requests));
  const http = mountRoutes(app, { ...deps, tokens, identity, accounts, sessions, services, recorder, events });

  return {
    /** The Node request listener. */
    callback: () => app.callback(),
    endpoints: http.endpoints,
    /** The response to a request Node's parser refused, in the shape its path's interface uses. */
    parserRejection,
    identity,
    sessions,
    /** Decides who may connect to a session's stream (the relay asks). */
    authorizeStream: createStreamAccess(store, tokens, deps.ticketer, now),
    /**
     * Where the relay (or, in a cluster, the control node for its edges) reports clients joining
     * and leaving session streams: a session nobody is connected to closes `idle`. Never throw.
     */
    streamClients: {
      attached(sessionId: string): void {
        sessions.streamAttached(sessionId);
        deps.peers?.streams([sessionId], []);
      },
      detached(sessionId: string): void {
        sessions.streamDetached(sessionId);
        deps.peers?.streams([], [sessionId]);
      },
    },
    /** What the other peers tell this one (cluster/peers.ts). */
    fromPeers: peerInbox(events, tokens, sessions),
    /** Where the relay reports agents coming and going: recorded (with this node and a generation), and published as events. */
    presence: createPresence(store, deps.node, events),
    /** Records shell sessions' streams (the relay reports them). */
    recordings: recorder.port,
    /** Where the relay hands its agents' job messages, and their connections' ends. */
    jobs: { message: dispatcher.message, gone: dispatcher.gone },
    /** Adds tunnel byte counts to session records (the relay reports them). */
    recordBytes: (counts: Map<string, { toDevice: number; fromDevice: number }>) => store.sessions.addBytes(counts),
    /** Reconciles sessions left open by a previous run, arms the expiry timer and starts the housekeeping. */
    async start() {
      // Claims left by requests a previous run never finished: on SQLite every one of them (this
      // process is the only one); on PostgreSQL only those too old to belong to a peer's request in flight.
      const abandoned = await store.idempotency.abandonUnfinished(store.dialect === 'sqlite' ? now() : now() - ABANDONED_CLAIM_MS);
      if (abandoned > 0) log.info('forgot idempotency keys of requests the last run did not finish', { count: abandoned });
      const reconciled = await sessions.reconcile();
      if (reconciled.expired + reconciled.closed > 0) log.info('reconciled sessions left open', reconciled);
      await sessions.start();
      housekeeping.start();
      dispatcher.start();
      webhooks.start();
      await services.resume();
      void recorder.start().catch((err: Error) => log.error('recordings could not start', { err: err.message }));
    },
    /**
     * Stops the runtime and the housekeeping, and closes every open session with `server_shutdown`
     * (one process); a peer leaves them to the others (their agents reconnect to another peer).
     */
    async shutdown() {
      runtime.close();
      await services.idle(); // the reports already queued are written before the database closes
      await dispatcher.close();
      await webhooks.close();
      await housekeeping.stop();
      return sessions.shutdown();
    },
    /** Waits for the recordings to be written, before the database closes. */
    drain: () => recorder.stop(),
  };
}
export type Api = ReturnType<typeof createApi>;
