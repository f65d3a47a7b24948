/**
 * @module Every route the API serves, mounted in order on the Koa application: the public ones
 * (health, logins, the event stream, the console, the OpenAPI document), then authentication, then
 * every feature's routes with the limits and safe retries they take. api/operations.ts is the
 * same list as the OpenAPI document describes it; a test holds the two together.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { Ticketer } from '../shared/auth/tickets';
import { ACCESS_LIMITS } from '../shared/api/access';
import { accessRoutes } from './access-requests/routes';
import { AUDIT_EVENTS_PER_MINUTE, auditRoutes } from './audit/routes';
import { consoleRoutes } from './console/routes';
import type { Services } from './services/services';
import { serviceRoutes } from './services/routes';
import { DEVICE_LIST_PER_MINUTE, deviceRoutes } from './devices/routes';
import type { EventHub } from './events/hub';
import { eventRoutes } from './events/routes';
import { createFleet } from './fleet/fleet';
import { fleetRoutes } from './fleet/routes';
import { authenticate } from './http/auth';
import { healthRoutes } from './http/health';
import { createIdempotency } from './http/idempotency';
import { createRateLimiter, RATE_LIMIT_WINDOW_MS } from './http/rate-limit';
import type { Accounts } from './identity/accounts';
import { createAuditedIdentity } from './identity/audited';
import type { Identity } from './identity/identity';
import { agentBlobRoutes, blobRoutes } from './jobs/blobs';
import { jobRoutes } from './jobs/routes';
import { identityRoutes, LOGIN_FAILURES_PER_MINUTE, publicIdentityRoutes } from './identity/routes';
import type { TokenResolver } from './identity/token-cache';
import { openApiRoutes } from './openapi/routes';
import { buildApiDocument } from './operations';
import type { Recorder } from './recordings/recorder';
import { recordingRoutes, recordingViewer } from './recordings/routes';
import type { Relay } from './relay';
import { AUDIT_LIST_PER_MINUTE, SESSION_OPEN_PER_MINUTE, sessionRoutes } from './sessions/routes';
import type { Sessions } from './sessions/sessions';
import type { Store } from './store/index';
import { webhookRoutes } from './webhooks/routes';

export interface RouteDeps {
  store: Store;
  relay: Relay;
  log: Logger;
  metrics: Metrics;
  ticketer: Ticketer;
  wsBase: () => string;
  now: () => number;
  consoleDir?: string | undefined;
  /** Whether the bus is connected (a peer's), for `/readyz`. */
  busUp?: (() => boolean) | undefined;
  tokens: TokenResolver;
  identity: Identity;
  accounts: Accounts;
  sessions: Sessions;
  services: Services;
  recorder: Recorder;
  events: EventHub;
  /** How long an access request stays pending (TETHER_ACCESS_REQUEST_TTL_SECONDS; default 86400). */
  accessRequestTtlSeconds?: number | undefined;
}

/** Mounts every route on `app`; answers what the rest of the API needs of them. */
export function mountRoutes(app: Koa, deps: RouteDeps) {
  const { store, now, sessions } = deps;
  // Per-user limits: counted in the database on PostgreSQL, so that they hold across peers.
  const limiter = (group: string, perMinute: number) => createRateLimiter(store, group, perMinute, RATE_LIMIT_WINDOW_MS, now);
  const loginFailures = limiter('login-failures', LOGIN_FAILURES_PER_MINUTE);
  // Identity changes with their audit events (api/identity/audited.ts).
  const audited = createAuditedIdentity(store, now);
  const eventsHttp = eventRoutes({ hub: deps.events, tokens: deps.tokens, now, log: deps.log.child({ component: 'events' }) });
  const publicRoutes: Router[] = [
    healthRoutes(store, deps.metrics, deps.busUp),
    publicIdentityRoutes(audited, loginFailures),
    eventsHttp.open,
    consoleRoutes(deps.consoleDir, deps.wsBase),
    openApiRoutes(buildApiDocument),
    // Agents fetch blobs with their device token, not an operator's.
    agentBlobRoutes(store),
  ];
  for (const r of publicRoutes) app.use(r.routes());

  app.use(authenticate(deps.tokens, now));
  const idempotent = createIdempotency(store, now);
  const routes: Router[] = [
    identityRoutes(audited, deps.accounts, { store, failures: loginFailures, idempotent, now }),
    auditRoutes(store, limiter('audit-events', AUDIT_EVENTS_PER_MINUTE)),
    deviceRoutes({ store, identity: audited, sessions, relay: deps.relay, listLimiter: limiter('device-list', DEVICE_LIST_PER_MINUTE), idempotent }),
    sessionRoutes({
      store,
      sessions,
      ticketer: deps.ticketer,
      wsBase: deps.wsBase,
      openLimiter: limiter('session-open', SESSION_OPEN_PER_MINUTE),
      auditLimiter: limiter('audit-list', AUDIT_LIST_PER_MINUTE),
      idempotent,
      recordingOf: recordingViewer(store, deps.recorder),
    }),
    recordingRoutes({ store, sessions, recorder: deps.recorder, now }),
    eventsHttp.authed,
    serviceRoutes(deps.services, store, idempotent),
    fleetRoutes(createFleet(store, now), idempotent),
    jobRoutes({ store, events: deps.events, idempotent, now }),
    blobRoutes(store, now),
    accessRoutes({
      store,
      events: deps.events,
      idempotent,
      now,
      pendingTtlSeconds: deps.accessRequestTtlSeconds ?? ACCESS_LIMITS.pendingTtlSecondsDefault,
      closeSessionsOf: (requestId, actor) => sessions.closeAllOfGrant(requestId, actor),
    }),
    webhookRoutes({ store, idempotent, now }),
  ];
  for (const r of routes) app.use(r.routes());

  return {
    /** Every route served, `METHOD /path` with `{param}` placeholders (docs/http-api.md lists them). */
    endpoints(): string[] {
      return [...publicRoutes, ...routes].flatMap((router) =>
        router.stack.flatMap((layer) => layer.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${String(layer.path).replace(/:(\w+)/g, '{$1}')}`)),
      );
    },
    /** A token was cut off: its event streams end now. */
    tokenRevoked: (tokenId: string) => eventsHttp.tokenRevoked(tokenId),
  };
}
