/**
 * @module What the deploy commands share: a service record as the API answers it
 * (docs/http-api.md, deployments), its URL, and how its state reads for people.
 */
import { ApiFailure } from '../../api-client';
import type { Context } from '../../context';

export const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** A service in one environment: `GET /v1/services/{name}`, and the answer of every change. */
export interface Service {
  name: string;
  environment: Environment;
  status: 'deploying' | 'healthy' | 'degraded' | 'failed';
  image: string;
  replicas: { desired: number; ready: number };
  current_revision: string;
  previous_revision?: string | null;
  last_deployed_at: string;
  gitops_sync_status?: 'Synced' | 'OutOfSync';
  dry_run?: boolean;
  runtime: string;
  canary?: { revision: string; weight: number };
}

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

/** The service, or null when it is not deployed in `env`. */
export async function serviceOrNull(ctx: Context, name: string, env: Environment): Promise<Service | null> {
  try {
    return await ctx.api().request<Service>('GET', serviceUrl(name, env));
  } catch (err) {
    if (err instanceof ApiFailure && err.status === 404) return null;
    throw err;
  }
}
