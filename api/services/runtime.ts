/**
 * @module What runs the services: the API decides (apply a revision, set canary weights,
 * remove), a runtime carries it out and reports replica readiness back. The API and the status
 * derivation know only this interface, never which runtime is behind it.
 */
import type { Logger } from '../../shared/log';
import type { Environment } from '../store/services';

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
}

export interface RuntimeReport {
  service: string;
  environment: Environment;
  rollout: number;
  ready: number;
  /** `failed` when the runtime gave up on the rollout. */
  state: 'progressing' | 'failed';
  message?: string;
}

export interface DeploymentRuntime {
  /** Shown in service records (`runtime`). */
  readonly name: string;
  apply(target: RolloutTarget): void;
  setCanaryWeight(service: string, environment: Environment, weight: number): void;
  remove(service: string, environment: Environment): void;
  /** Stops timers and connections; reports stop. */
  close(): void;
}

export type RuntimeFactory = (report: (r: RuntimeReport) => void, log: Logger) => DeploymentRuntime;
