/**
 * @module What runs the services: the API decides (apply a revision, set canary weights,
 * remove), a runtime carries it out and reports replica readiness back. The API and the status
 * derivation know only this interface, never which runtime is behind it.
 */
import type { Logger } from '../../shared/log';
import type { Environment } from '../store/services';

/** How one revision runs: what a runtime needs to start (or restart) its replicas. */
export interface RevisionRun {
  revision: string;
  image: string;
  /** The container's HTTP port (`service.port`, default 8080). */
  port: number;
  /** An HTTP check of the container's port (`deployment.health`); none: the image's own HEALTHCHECK, else running is ready. */
  health?: HealthCheck | undefined;
  /** `config.env`: the containers' environment. */
  env: Record<string, string>;
  /** `secrets.vault`: each file `<secrets dir>/<path>` is read into the variable `env` (never logged, never stored). */
  secrets: Array<{ path: string; env: string }>;
}

export interface HealthCheck {
  path: string;
  intervalSeconds: number;
  timeoutSeconds: number;
  retries: number;
}

export interface RolloutTarget {
  service: string;
  environment: Environment;
  /** Identifies this rollout; reports carry it back so stale ones can be ignored. */
  rollout: number;
  revision: string;
  image: string;
  replicas: number;
  /** Replicas of this rollout already ready (a rollout resumed after a restart). */
  ready: number;
  /** With a canary: the revision deployed beside the stable one and its share of traffic. */
  canary?: { stableRevision: string; weight: number } | undefined;
  /** How the deployed revision (`revision`: the canary, during one) runs. */
  run: RevisionRun;
  /** During a canary: how the stable revision runs (its replicas stay beside the canary's). */
  stableRun?: RevisionRun | undefined;
  /** During a canary: how many replicas the stable revision runs (its spec's count). */
  stableReplicas?: number | undefined;
}

export interface RuntimeReport {
  service: string;
  environment: Environment;
  rollout: number;
  ready: number;
  /** `failed` when the runtime gave up on the rollout. */
  state: 'progressing' | 'failed';
  /** Why it failed (with the container's last log lines), or what it is waiting for. */
  message?: string;
  /** Ready replicas per revision (a canary's and the stable one's), when the runtime knows them. */
  readyByRevision?: Record<string, number> | undefined;
}

export interface DeploymentRuntime {
  /** Shown in service records (`runtime`): the runtime of an environment. */
  nameOf(environment: Environment): string;
  /** Where an environment's services are reached (`http://HOST:PORT`), when the runtime runs an ingress. */
  endpointOf?(environment: Environment): string | undefined;
  /** The replicas' recent log lines (`tether deploy logs`), when the runtime keeps any. */
  logs?(service: string, environment: Environment, lines: number): Promise<Array<{ replica: string; revision: string; lines: string[] }>>;
  apply(target: RolloutTarget): void;
  setCanaryWeight(service: string, environment: Environment, weight: number): void;
  remove(service: string, environment: Environment): void;
  /** Stops timers and connections; reports stop. */
  close(): void;
}

/**
 * Makes a runtime. It hands its reports to `report` from its timers and events, in order per
 * service; `report` takes each at once and never throws (the API records them later, in that order).
 */
export type RuntimeFactory = (report: (r: RuntimeReport) => void, log: Logger) => DeploymentRuntime;

/** One runtime per environment (`TETHER_DEPLOY_RUNTIME_DEV` …): each environment's calls go to its own. */
export function perEnvironment(factories: Record<Environment, RuntimeFactory>): RuntimeFactory {
  return (report, log) => {
    const made = new Map<RuntimeFactory, DeploymentRuntime>();
    const of = (env: Environment): DeploymentRuntime => {
      const factory = factories[env];
      let runtime = made.get(factory);
      if (!runtime) made.set(factory, (runtime = factory(report, log)));
      return runtime;
    };
    for (const env of Object.keys(factories) as Environment[]) of(env);
    return {
      nameOf: (env) => of(env).nameOf(env),
      endpointOf: (env) => of(env).endpointOf?.(env),
      async logs(service, env, lines) {
        return (await of(env).logs?.(service, env, lines)) ?? [];
      },
      apply: (t) => of(t.environment).apply(t),
      setCanaryWeight: (service, env, weight) => of(env).setCanaryWeight(service, env, weight),
      remove: (service, env) => of(env).remove(service, env),
      close: () => {
        for (const r of made.values()) r.close();
      },
    };
  };
}
