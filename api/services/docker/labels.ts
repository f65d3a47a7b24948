/**
 * @module How the `docker` runtime recognises its replicas: labels on every container (environment,
 * service, revision, the rollout that started it, and a digest of how it runs), so that what runs
 * can be read back from the engine alone, after a restart too. A replica whose digest differs
 * from its revision's current one runs an older spec of that revision and is replaced.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Environment } from '../../store/services';
import type { RevisionRun } from '../runtime';

export const LABEL = {
  env: 'tether.env',
  service: 'tether.service',
  revision: 'tether.revision',
  rollout: 'tether.rollout',
  spec: 'tether.spec',
} as const;

/** The label filter for an environment's replicas, or one service's. */
export function labelFilter(environment: Environment, service?: string): string[] {
  const labels = [`${LABEL.env}=${environment}`];
  if (service !== undefined) labels.push(`${LABEL.service}=${service}`);
  return labels;
}

/**
 * A digest of how a revision runs: image, port, health check, environment and which secrets it
 * reads. Secret values stay out of it (a digest of a short secret can be guessed), so rotating a
 * secret file alone does not replace running replicas.
 */
export function specDigest(run: RevisionRun): string {
  const env = Object.entries(run.env).sort(([a], [b]) => (a < b ? -1 : 1));
  const secrets = run.secrets.map((s) => [s.path, s.env]).sort();
  const canonical = JSON.stringify([run.image, run.port, run.health ?? null, env, secrets]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

/** The labels of a new replica. */
export function replicaLabels(environment: Environment, service: string, rollout: number, run: RevisionRun): Record<string, string> {
  return {
    [LABEL.env]: environment,
    [LABEL.service]: service,
    [LABEL.revision]: run.revision,
    [LABEL.rollout]: String(rollout),
    [LABEL.spec]: specDigest(run),
  };
}

/** A container name that says what it is and never collides: `tether-dev-web-v1.2.0-3f9a1c`. */
export function replicaName(environment: Environment, service: string, revision: string): string {
  return `tether-${environment}-${service}-${revision}-${randomBytes(3).toString('hex')}`;
}

/** The engine network of an environment's replicas. */
export const networkName = (environment: Environment): string => `tether-${environment}`;
