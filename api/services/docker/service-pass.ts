/**
 * @module One reconcile pass of one service: read its replicas from the engine, start what is
 * missing, set the route, remove what the route no longer needs, and report. Passes of a
 * service never overlap (environment.ts); a pass that finds its instructions changed under it
 * (a newer apply, weight or remove) stops before touching anything else and the next one
 * starts from what runs then. Nothing is removed unless the route was set first.
 */
import type { Logger } from '../../../shared/log';
import type { Environment } from '../../store/services';
import type { RuntimeReport } from '../runtime';
import type { Desired } from './desired';
import { engineMessage, type Engine } from './engine';
import type { Ingress, RouteServer } from './ingress';
import { adoptedRoute, plan, type Plan } from './plan';
import { listReplicas, tailLogs, type Replica } from './replicas';

/** What a pass uses of its environment's ingress. */
export type IngressRoutes = Pick<Ingress, 'setRoute' | 'removeRoute'>;

export interface ServiceState {
  /** Undefined: replicas found with no instructions (adopted as they are). */
  desired: Desired | undefined;
  /** Removed: its replicas and route go, then the state. */
  removing: boolean;
  /** Bumped by every instruction: a pass that started under an older one stops. */
  gen: number;
  /** When the current rollout began (its deadline runs from here). */
  since: number;
  /** The current rollout had every replica ready once: later losses are drift, not failure. */
  completed: boolean;
  /** Images pulled for the current rollout (a tag may move: each rollout pulls once). */
  pulled: Set<string>;
  pullError: { message: string; retryAt: number } | undefined;
  startError: string | undefined;
  routeError: string | undefined;
  failure: string | undefined;
  lastReport: string | undefined;
  lastRoute: string | undefined;
  adoptedLogged: boolean;
}

export const newServiceState = (now: number): ServiceState => ({
  desired: undefined,
  removing: false,
  gen: 0,
  since: now,
  completed: false,
  pulled: new Set(),
  pullError: undefined,
  startError: undefined,
  routeError: undefined,
  failure: undefined,
  lastReport: undefined,
  lastRoute: undefined,
  adoptedLogged: false,
});

export interface PassDeps {
  environment: Environment;
  engine: Engine;
  ingress: () => Promise<IngressRoutes>;
  report: (r: RuntimeReport) => void;
  log: Logger;
  secretsDir: string | undefined;
  deadlineMs: number;
  /** How long a replica that served gets to finish its requests when stopped. */
  graceSeconds: number;
  pullRetryMs: number;
  now: () => number;
}

/** The outcome of a pass: whether the service needs another one soon, and whether it is gone. */
export interface PassResult {
  settled: boolean;
  gone: boolean;
}

const LOG_LINES = 20;
/** Replicas started at once per revision; a pass that leaves some out is followed by another soon. */
const MAX_STARTS_PER_PASS = 8;

/** What keeps the rollout from going on, when something does: a pull, a start or the ingress. */
const problemOf = (s: ServiceState): string | undefined => s.pullError?.message ?? s.startError ?? s.routeError;

async function startMissing(deps: PassDeps, service: string, s: ServiceState, p: Plan): Promise<void> {
  const before = s.startError;
  s.startError = undefined;
  if (p.start.length === 0) return;
  await deps.engine.ensureNetwork(deps.environment);
  const errors: string[] = [];
  for (const { wanted, count } of p.start) {
    const { image } = wanted.run;
    if (!s.pulled.has(image)) {
      if (s.pullError && deps.now() < s.pullError.retryAt) continue;
      try {
        await deps.engine.ensureImage(image, true);
        s.pulled.add(image);
        s.pullError = undefined;
      } catch (err) {
        const message = engineMessage(err);
        if (message !== s.pullError?.message) deps.log.warn('image pull failed: retrying', { service, environment: deps.environment, image, error: message });
        s.pullError = { message, retryAt: deps.now() + deps.pullRetryMs };
        continue;
      }
    }
    const started = await Promise.allSettled(
      Array.from({ length: Math.min(count, MAX_STARTS_PER_PASS) }, () =>
        deps.engine.startReplica({ environment: deps.environment, service, rollout: s.desired!.target.rollout, run: wanted.run, secretsDir: deps.secretsDir }),
      ),
    );
    for (const r of started) if (r.status === 'rejected') errors.push(engineMessage(r.reason));
  }
  s.startError = errors[0];
  if (errors.length > 0 && errors[0] !== before)
    deps.log.warn('replicas did not start', { service, environment: deps.environment, error: errors[0], failed: errors.length });
}

async function setRoute(deps: PassDeps, service: string, s: ServiceState, route: RouteServer[]): Promise<void> {
  const key = JSON.stringify(route);
  if (key === s.lastRoute) return;
  await (await deps.ingress()).setRoute(service, route);
  s.lastRoute = key;
}

/** Sets the route; false (the reason kept for the report) when the ingress failed: then nothing may be removed. */
async function routed(deps: PassDeps, service: string, s: ServiceState, route: RouteServer[]): Promise<boolean> {
  try {
    await setRoute(deps, service, s, route);
    s.routeError = undefined;
    return true;
  } catch (err) {
    s.routeError = `the ingress: ${engineMessage(err)}`;
    s.lastRoute = undefined;
    return false;
  }
}

async function removeAll(deps: PassDeps, replicas: Replica[]): Promise<void> {
  await Promise.all(replicas.map((r) => deps.engine.removeReplica(r.id, r.ready ? deps.graceSeconds : 0)));
}

/** The failure message of an overdue rollout: how far it got, why, and a waiting replica's last lines. */
async function failureOf(deps: PassDeps, s: ServiceState, p: Plan): Promise<string> {
  const { target } = s.desired!;
  const parts = [`${target.revision} did not become ready within ${deps.deadlineMs / 1000} s: ${p.ready} of ${target.replicas} replicas ready`];
  const why = problemOf(s);
  if (why) parts.push(why);
  const stuck = p.waiting.find((r) => r.revision === target.revision) ?? p.waiting[0];
  if (stuck) {
    const lines = await tailLogs(deps.engine.docker, stuck.id, LOG_LINES).catch(() => []);
    const state = `${stuck.state}${stuck.health ? `, ${stuck.health}` : ''}`;
    if (stuck.lastCheck) parts.push(`its health check said: ${stuck.lastCheck.slice(0, 500)}`);
    parts.push(lines.length > 0 ? `last log lines of ${stuck.name} (${state}):\n${lines.join('\n')}` : `${stuck.name} is ${state} and logged nothing`);
  }
  return parts.join('; ');
}

async function reportPass(deps: PassDeps, service: string, s: ServiceState, p: Plan): Promise<void> {
  const { target } = s.desired!;
  if (p.complete) s.completed = true;
  const overdue = !p.complete && !s.completed && deps.now() - s.since > deps.deadlineMs;
  if (overdue && s.failure === undefined) s.failure = await failureOf(deps, s, p);
  const waitingFor = p.complete ? undefined : `waiting for ${target.revision}: ${p.ready} of ${target.replicas} replicas ready`;
  const why = problemOf(s);
  const message = overdue ? s.failure : waitingFor && (why ? `${waitingFor}; ${why}` : waitingFor);
  const r: RuntimeReport = {
    service,
    environment: deps.environment,
    rollout: target.rollout,
    ready: p.ready,
    state: overdue ? 'failed' : 'progressing',
    ...(message !== undefined && { message }),
    readyByRevision: p.readyByRevision,
  };
  const key = JSON.stringify(r);
  if (key === s.lastReport) return;
  s.lastReport = key;
  if (r.state === 'failed')
    deps.log.warn('rollout failed: the previous revision keeps serving', { service, environment: deps.environment, revision: target.revision });
  deps.report(r);
}

/** Replicas found with no instructions (a restart that lost them): kept and routed as they are. */
async function passAdopted(deps: PassDeps, service: string, s: ServiceState, replicas: Replica[]): Promise<PassResult> {
  if (replicas.length === 0) return { settled: true, gone: true };
  if (!s.adoptedLogged) {
    deps.log.warn('replicas without instructions: kept serving as they are until the service is applied or removed', {
      service,
      environment: deps.environment,
    });
    s.adoptedLogged = true;
  }
  await setRoute(deps, service, s, adoptedRoute(replicas));
  return { settled: true, gone: false };
}

/** One pass; `current()` tells whether the instructions are still the ones it started with. */
export async function pass(deps: PassDeps, service: string, s: ServiceState, current: () => boolean): Promise<PassResult> {
  const replicas = await listReplicas(deps.engine.docker, deps.environment, service);
  if (!current()) return { settled: false, gone: false };
  const desired = s.desired;
  if (s.removing) {
    await (await deps.ingress()).removeRoute(service);
    s.lastRoute = undefined;
    await removeAll(deps, replicas);
    return { settled: true, gone: current() };
  }
  if (!desired) return passAdopted(deps, service, s, replicas);
  const p = plan(desired, replicas);
  await startMissing(deps, service, s, p);
  if (!current()) return { settled: false, gone: false };
  const ok = await routed(deps, service, s, p.route);
  if (!current()) return { settled: false, gone: false };
  if (ok) await removeAll(deps, p.remove);
  await reportPass(deps, service, s, p);
  // An ingress that failed is tried again by the tick, not at once.
  return { settled: ok ? p.settled : true, gone: false };
}
