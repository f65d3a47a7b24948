/**
 * @module The `docker` deployment runtime: services run as containers of a Docker Engine
 * (dockerode), reached through one HAProxy ingress per environment. The API's database says what
 * should run; this runtime makes the engine match it, repairs drift by itself, and reports what
 * it sees (ready replicas per revision, or a rollout that failed), asynchronously, after the API
 * answered. A restarted tether adopts the running containers and the ingress: no duplicates, no
 * gap. See environment.ts for the loop, plan.ts for the rules of a rollout.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../../shared/log';
import type { Environment } from '../../store/services';
import type { DeploymentRuntime, RuntimeFactory, RuntimeReport } from '../runtime';
import { createEngine } from './engine';
import { createEnvironment, type DockerEnvironment } from './environment';
import { startIngress, type Ingress, type IngressOptions } from './ingress';
import { loadInstructions, saveInstructions } from './state-file';

export const ENVIRONMENTS: readonly Environment[] = ['dev', 'staging', 'prod'];

export interface DockerRuntimeOptions {
  /** `DOCKER_HOST`: `unix:///path` (default /var/run/docker.sock) or `tcp://host:port`. */
  dockerHost?: string | undefined;
  /** Where each environment's ingress keeps its files (`<runDir>/<env>/`), and the runtime its instructions. */
  runDir: string;
  /** `TETHER_SECRETS_DIR`: `secrets.vault[].path` is read from here. */
  secretsDir?: string | undefined;
  /** `TETHER_ROLLOUT_DEADLINE_SECONDS` (default 300): a rollout not ready by then is failed. */
  deadlineSeconds?: number | undefined;
  /** `TETHER_INGRESS_DEV`, `_STAGING`, `_PROD` (host:port, default 127.0.0.1:0). */
  ingressListen?: Partial<Record<Environment, string>> | undefined;
  /** The environments this runtime serves: their ingress and loop start at once (default all three; others on first use). */
  environments?: readonly Environment[] | undefined;
  /** Docker's client config with the registry credentials (default ~/.docker/config.json). */
  dockerConfig?: string | undefined;
  /** How often every service is looked at (default 2000 ms). */
  reconcileMs?: number | undefined;
  /** How soon a service with work pending is looked at again (default 500 ms). */
  followUpMs?: number | undefined;
  /** How long a replica that served gets to stop (SIGTERM, then SIGKILL; default 10 s). */
  graceSeconds?: number | undefined;
  /** Passed to the ingress: HAProxy's path, slot count, how long a leaving server may drain. */
  ingress?: Pick<IngressOptions, 'haproxyPath' | 'slots' | 'drainTimeoutMs'> | undefined;
}

/** The runtime's instructions file of an environment. */
export const instructionsFile = (runDir: string, environment: Environment) => join(runDir, environment, 'runtime.json');

interface Served {
  loop: DockerEnvironment;
  ingress: () => Promise<Ingress>;
  endpoint: string | undefined;
  started: Promise<Ingress> | undefined;
  /** The last start failure logged (each distinct one once: passes retry the start). */
  lastError: string | undefined;
}

export function dockerRuntime(options: DockerRuntimeOptions): RuntimeFactory {
  return (report: (r: RuntimeReport) => void, parentLog: Logger): DeploymentRuntime => {
    const log = parentLog.child({ runtime: 'docker' });
    const dockerHost = options.dockerHost ?? 'unix:///var/run/docker.sock';
    const engine = createEngine(dockerHost, options.dockerConfig ?? join(homedir(), '.docker', 'config.json'));
    const served = new Map<Environment, Served>();
    let closed = false;

    function safeReport(r: RuntimeReport): void {
      if (closed) return;
      try {
        report(r);
      } catch (err) {
        log.error('a runtime report was not taken', { service: r.service, environment: r.environment, err });
      }
    }

    /** The environment's ingress, started (or adopted) once; a failed start is retried by the next pass. */
    function ingressOf(environment: Environment, entry: Served): Promise<Ingress> {
      if (entry.started) return entry.started;
      const started = startIngress({
        environment,
        listen: options.ingressListen?.[environment] ?? '127.0.0.1:0',
        runDir: join(options.runDir, environment),
        log,
        ...options.ingress,
      });
      entry.started = started;
      started.then(
        (ingress) => {
          entry.endpoint = ingress.endpoint;
          entry.lastError = undefined;
          if (closed) void ingress.close();
        },
        (err: unknown) => {
          entry.started = undefined;
          const message = err instanceof Error ? err.message : String(err);
          if (message !== entry.lastError) log.error('the ingress did not start: services of this environment are not routed', { environment, error: message });
          entry.lastError = message;
        },
      );
      return started;
    }

    function of(environment: Environment): DockerEnvironment {
      const known = served.get(environment);
      if (known) return known.loop;
      const file = instructionsFile(options.runDir, environment);
      const entry = { endpoint: undefined, started: undefined, lastError: undefined } as Served;
      entry.ingress = () => ingressOf(environment, entry);
      entry.loop = createEnvironment({
        environment,
        engine,
        ingress: entry.ingress,
        report: safeReport,
        log,
        secretsDir: options.secretsDir,
        deadlineMs: (options.deadlineSeconds ?? 300) * 1000,
        graceSeconds: options.graceSeconds ?? 10,
        pullRetryMs: 5000,
        now: Date.now,
        reconcileMs: options.reconcileMs ?? 2000,
        followUpMs: options.followUpMs ?? 500,
        instructions: loadInstructions(file),
        save: (instructions) => saveInstructions(file, instructions),
      });
      served.set(environment, entry);
      void entry.ingress().catch(() => {}); // logged by ingressOf; the endpoint is known as soon as it listens
      return entry.loop;
    }

    for (const environment of options.environments ?? ENVIRONMENTS) of(environment);
    log.info('deployment runtime is docker', { docker_host: dockerHost, environments: [...served.keys()] });

    return {
      nameOf: () => 'docker',
      endpointOf(environment) {
        of(environment);
        return served.get(environment)?.endpoint;
      },
      logs: (service, environment, lines) => of(environment).logs(service, lines),
      apply: (target) => of(target.environment).apply(target),
      setCanaryWeight: (service, environment, weight) => of(environment).setCanaryWeight(service, weight),
      remove: (service, environment) => of(environment).remove(service),
      close() {
        closed = true;
        for (const { loop, started } of served.values()) {
          loop.close();
          // The ingress's HAProxy keeps serving: the next tether adopts it.
          started?.then((ingress) => ingress.close()).catch(() => {});
        }
      },
    };
  };
}
