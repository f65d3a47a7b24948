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
import { createRecorder, type RecorderSettings } from './recordings/recorder';
import { createEventHub } from './events/hub';
import type { SessionRow } from './store/sessions';
import type { PresenceChange } from './store/devices';
import { mountRoutes } from './routes';

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
}

export function createApi(deps: ApiDeps) {
  const { store, relay, log, metrics, now } = deps;
  const tokens = createTokenResolver(store.tokens);
  const identity = createIdentity(store, now);
  // A token cut off (revoked, or its user disabled or deleted) stops at once: its cache entry,
  // the sessions it opened (and their tickets), and the streams it admitted on other sessions.
  const accounts = createAccounts(store, now, {
    userChanged: (username) => tokens.userChanged(username),
    cutOff(tokenIds, reason) {
      for (const tokenId of tokenIds) {
        tokens.revoked(tokenId);
        sessions.closeAllOfToken(tokenId, reason);
        relay.tokenRevoked(tokenId);
        http.tokenRevoked(tokenId);
      }
    },
  });
  const recorder = createRecorder(store, deps.recordings, log.child({ component: 'recordings' }), now, metrics);
  const events = createEventHub();
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
    sessionClosed(session) {
      relay.sessionClosed(session);
      recorder.sessionClosed(session.session_id);
      sessionEvent('session.closed', session);
    },
  };
  const sessions = createSessions({
    store,
    relay: sessionRelay,
    log: log.child({ component: 'sessions' }),
    now,
    idleSeconds: deps.sessionIdleSeconds,
  });
  // The runtime reports to the deployment service, which exists once the runtime does.
  const runtime = deps.runtime((report) => services.onReport(report), log.child({ component: 'runtime' }));
  const services = createServices({ store, runtime, log: log.child({ component: 'services' }), now });
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
      attached: (sessionId: string): void => sessions.streamAttached(sessionId),
      detached: (sessionId: string): void => sessions.streamDetached(sessionId),
    },
    /** Where the relay reports agents coming and going: recorded, and published as events. */
    presence: {
      online(deviceId: string, agentVersion: string | null, at: number, forwardAllow: readonly string[] | null) {
        const iso = new Date(at).toISOString();
        store.devices.markOnline(deviceId, agentVersion, iso, forwardAllow);
        events.publish({ event: 'agent.online', data: { device_id: deviceId, at: iso } });
      },
      offline(deviceId: string, at: number) {
        const iso = new Date(at).toISOString();
        store.devices.markOffline(deviceId, iso);
        events.publish({ event: 'agent.offline', data: { device_id: deviceId, at: iso } });
      },
      /** Many changes at once, in one transaction (a cluster's control node batches them). */
      apply(changes: readonly PresenceChange[]) {
        store.devices.applyPresence(changes);
        for (const c of changes) events.publish({ event: c.kind === 'online' ? 'agent.online' : 'agent.offline', data: { device_id: c.deviceId, at: c.at } });
      },
      /** The devices recorded online. */
      onlineIds: () => store.devices.onlineIds(),
      seen: (lastSeen: Map<string, number>) => store.devices.markSeen(new Map([...lastSeen].map(([id, at]) => [id, new Date(at).toISOString()]))),
    },
    /** Records shell sessions' streams (the relay reports them). */
    recordings: recorder.port,
    /** Adds tunnel byte counts to session records (the relay reports them). */
    recordBytes: (counts: Map<string, { toDevice: number; fromDevice: number }>) => store.sessions.addBytes(counts),
    /** Reconciles sessions left open by a previous run and arms the expiry timer. */
    start() {
      const abandoned = store.idempotency.abandonUnfinished();
      if (abandoned > 0) log.info('forgot idempotency keys of requests the last run did not finish', { count: abandoned });
      const reconciled = sessions.reconcile();
      if (reconciled.expired + reconciled.closed > 0) log.info('reconciled sessions left open', reconciled);
      sessions.start();
      services.resume();
      void recorder.start().catch((err: Error) => log.error('recordings could not start', { err: err.message }));
    },
    /** Closes every open session with `server_shutdown` and stops the runtime. */
    shutdown() {
      runtime.close();
      return sessions.shutdown();
    },
    /** Waits for the recordings to be written, before the database closes. */
    drain: () => recorder.stop(),
  };
}
export type Api = ReturnType<typeof createApi>;
