/**
 * @module How a stored revision runs (`RevisionRun`): read from the service spec stored with it,
 * which was validated when it was applied. What a runtime needs to start or restart the
 * revision's replicas: image, port, health check, environment, and which secrets to read.
 */
import type { RevisionRow } from '../store/services';
import type { RevisionRun } from './runtime';
import { parseSpec } from './spec';

/** The run of a revision; a spec that no longer parses (none should) runs its image on the defaults. */
export function runOf(rev: RevisionRow): RevisionRun {
  const parsed = parseSpec(rev.spec);
  if (!parsed.ok) return { revision: rev.revision, image: rev.image, port: 8080, env: {}, secrets: [] };
  const { spec } = parsed;
  const health = spec.deployment.health;
  return {
    revision: rev.revision,
    image: rev.image,
    port: spec.service.port,
    ...(health && {
      health: { path: health.path, intervalSeconds: health.interval_seconds, timeoutSeconds: health.timeout_seconds, retries: health.retries },
    }),
    env: { ...(spec.config?.env ?? {}) },
    secrets: (spec.secrets?.vault ?? []).map((v) => ({ path: v.path, env: v.env })),
  };
}
