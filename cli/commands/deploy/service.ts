/**
 * @module What the deploy commands share: the environments, a service's URL, how its state reads
 * for people, and reading one that may not exist. What the API answers is `shared/api/services.ts`
 * (docs/http-api.md, deployments).
 */
import type { Environment, Service, ServiceDetail } from '../../../shared/api/services';
import { stripTerminalEscapes } from '../../../shared/asciicast';
import { ApiFailure } from '../../api-client';
import type { Context } from '../../context';

export type { Environment } from '../../../shared/api/services';

/** The environments, in the order `deploy list` shows them. */
export const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const satisfies readonly Environment[];

export interface EnvFlag {
  env: Environment;
}

/** `/v1/services/NAME[/SUFFIX]?env=ENV[&…]`. */
export function serviceUrl(name: string, env: Environment, suffix = '', query: Record<string, string> = {}): string {
  return `/v1/services/${encodeURIComponent(name)}${suffix}?${new URLSearchParams({ env, ...query })}`;
}

export const shortTime = (iso: string | null | undefined) => (iso ? iso.replace(/\.\d+Z$/, 'Z') : null);

/** `healthy, 3 of 3 replicas ready`. */
export const stateOf = (s: Service) => `${s.status}, ${s.replicas.ready} of ${s.replicas.desired} replicas ready`;

/** `v1.0.0: 2, v1.1.0: 1`: ready replicas per revision, when the runtime reports them. */
export const readyByRevision = (s: Service) =>
  s.replicas.by_revision
    ? Object.entries(s.replicas.by_revision)
        .map(([revision, n]) => `${revision}: ${n}`)
        .join(', ') || 'none'
    : undefined;

/** `v1.1.0 at 20% (80% stays on v1.0.0)`: the canary's share of traffic now. */
export const canarySplit = (s: Service) =>
  s.canary ? `${s.canary.revision} at ${s.canary.weight}% (${100 - s.canary.weight}% stays on ${s.current_revision})` : undefined;

/**
 * Why a rollout failed, line by line: the runtime's reason, then the container's last log lines
 * (the service's words: escape sequences removed before they reach a terminal). None unless failed.
 */
export const failureLines = (s: Service): string[] => (s.status_message ? stripTerminalEscapes(s.status_message).split('\n') : []);

/** The first line of why a rollout failed: the runtime's reason. */
export const whyFailed = (s: Service): string | undefined => failureLines(s)[0];

/** The service, or null when it is not deployed in `env`. */
export async function serviceOrNull(ctx: Context, name: string, env: Environment): Promise<ServiceDetail | null> {
  try {
    return await ctx.api().request<ServiceDetail>('GET', serviceUrl(name, env));
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 404) return null;
    throw err;
  }
}
