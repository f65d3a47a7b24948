/**
 * @module Which runtime runs each environment's services (docs/deployments.md): the simulated one,
 * or the Docker Engine with an ingress per environment; one of each at most.
 */
import { join } from 'node:path';
import { dockerRuntime } from '../api/services/docker/runtime';
import { perEnvironment, type RuntimeFactory } from '../api/services/runtime';
import { simulatedRuntime } from '../api/services/simulated-runtime';
import type { ServerConfig } from './server-config';

/**
 * The deployment runtime of each environment (TETHER_DEPLOY_RUNTIME, _DEV/_STAGING/_PROD): one
 * simulated and one docker runtime at most, each serving the environments given to it.
 */
export function runtimeOf(config: Readonly<ServerConfig>): RuntimeFactory {
  const envs = Object.keys(config.runtimes) as Array<keyof ServerConfig['runtimes']>;
  const simulated = simulatedRuntime(config.sim_replica_ms);
  const onDocker = envs.filter((env) => config.runtimes[env] === 'docker');
  const docker =
    onDocker.length === 0
      ? undefined
      : dockerRuntime({
          dockerHost: config.docker_host,
          runDir: join(config.data_dir, 'ingress'),
          secretsDir: config.secrets_dir,
          deadlineSeconds: config.rollout_deadline_seconds,
          ingressListen: config.ingress,
          environments: onDocker,
        });
  return perEnvironment({
    dev: config.runtimes.dev === 'docker' ? docker! : simulated,
    staging: config.runtimes.staging === 'docker' ? docker! : simulated,
    prod: config.runtimes.prod === 'docker' ? docker! : simulated,
  });
}
