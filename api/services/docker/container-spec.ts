/**
 * @module What one replica's container is: its image, labels, environment (`config.env` and the
 * secret files), its port published on 127.0.0.1 only (a random host port the ingress is given),
 * an init process (a stop takes milliseconds), restart on failure, and the health check.
 *
 * The SSD's `deployment.health` becomes a Docker `Healthcheck` that runs
 * `/bin/busybox wget -q -O- http://127.0.0.1:PORT/PATH` inside the container: such a check needs
 * busybox (with its `wget`) at `/bin/busybox` in the image. Without `deployment.health` the
 * image's own `HEALTHCHECK` applies, else a running container is ready.
 */
import { readFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import type Docker from 'dockerode';
import type { Environment } from '../../store/services';
import type { HealthCheck, RevisionRun } from '../runtime';
import { networkName, replicaLabels, replicaName } from './labels';

const SECOND_NS = 1_000_000_000;

/** A problem that stops a replica from being started; its message names files, never values. */
export class ReplicaSpecError extends Error {}

/** The file of a secret under the secrets directory; a path that leads out of it is refused. */
export function secretFile(secretsDir: string, path: string): string {
  const root = resolve(secretsDir);
  const file = resolve(root, path);
  const rel = relative(root, file);
  if (isAbsolute(path) || rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    throw new ReplicaSpecError(`secret path ${JSON.stringify(path)} leads out of the secrets directory`);
  }
  return file;
}

/** The secrets as environment entries, read now (a rotated file reaches the next replica started). */
async function secretEnv(secretsDir: string | undefined, secrets: RevisionRun['secrets']): Promise<string[]> {
  if (secrets.length === 0) return [];
  if (!secretsDir) throw new ReplicaSpecError('the spec reads secrets but no secrets directory is set (TETHER_SECRETS_DIR)');
  return Promise.all(
    secrets.map(async ({ path, env }) => {
      let value: string;
      try {
        value = await readFile(secretFile(secretsDir, path), 'utf8');
      } catch (err) {
        if (err instanceof ReplicaSpecError) throw err;
        throw new ReplicaSpecError(`secret ${JSON.stringify(path)} for ${env} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
      }
      // A file written by `echo` ends with one newline that is not part of the secret.
      return `${env}=${value.replace(/\r?\n$/, '')}`;
    }),
  );
}

/** The Docker health check of an SSD `deployment.health`. */
export function healthcheckOf(port: number, health: HealthCheck): Docker.HealthConfig {
  return {
    Test: ['CMD', '/bin/busybox', 'wget', '-q', '-O-', `http://127.0.0.1:${port}${health.path}`],
    Interval: health.intervalSeconds * SECOND_NS,
    Timeout: health.timeoutSeconds * SECOND_NS,
    Retries: health.retries,
  };
}

export interface ReplicaSpecInput {
  environment: Environment;
  service: string;
  rollout: number;
  run: RevisionRun;
  secretsDir: string | undefined;
}

/** The create options of a new replica (secrets included: never log them). */
export async function containerOptions({ environment, service, rollout, run, secretsDir }: ReplicaSpecInput): Promise<Docker.ContainerCreateOptions> {
  const port = `${run.port}/tcp`;
  const env = [...Object.entries(run.env).map(([k, v]) => `${k}=${v}`), ...(await secretEnv(secretsDir, run.secrets))];
  return {
    name: replicaName(environment, service, run.revision),
    Image: run.image,
    Labels: replicaLabels(environment, service, rollout, run),
    Env: env,
    ExposedPorts: { [port]: {} },
    ...(run.health && { Healthcheck: healthcheckOf(run.port, run.health) }),
    HostConfig: {
      Init: true,
      RestartPolicy: { Name: 'on-failure', MaximumRetryCount: 0 },
      PortBindings: { [port]: [{ HostIp: '127.0.0.1', HostPort: '' }] },
      NetworkMode: networkName(environment),
    },
  };
}
