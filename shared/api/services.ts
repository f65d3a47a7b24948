/**
 * @module Services per environment over HTTP (docs/http-api.md, deployments): services,
 * their revisions and canaries, their replicas' logs, and the deployment audit; `env` on every
 * operation. The body of
 * an apply is a service spec in YAML, whose schema is the deployment feature's own
 * (api/services/spec.ts).
 */
import { z } from 'zod';
import type { ErrorCode } from './errors';
import { count, dateTimeParam, intParam, named, pagingParams, timestamp } from './common';

export const ENVIRONMENTS = ['dev', 'staging', 'prod'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];
export const SERVICE_STATUSES = ['healthy', 'degraded', 'failed', 'deploying'] as const;
export type ServiceStatus = (typeof SERVICE_STATUSES)[number];
/** The media types a service spec is sent as. */
export const YAML_TYPES = ['application/yaml', 'application/x-yaml', 'text/yaml'];

/** The codes these operations answer with besides those every operation may (docs/http-api.md, errors). */
export const SERVICE_ERRORS = [
  'forbidden',
  'not_found',
  'conflict',
  'precondition_failed',
  'unsupported_media_type',
  'invalid_spec',
  'unavailable',
] as const satisfies readonly ErrorCode[];

// Requests

const env = z.enum(ENVIRONMENTS, {
  error: (issue) => (issue.input === undefined ? 'is required: dev, staging or prod' : 'must be dev, staging or prod'),
});
export const envOnly = z.strictObject({ env });

export const applyQuery = z.strictObject({
  env,
  dry_run: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .default('false')
    .transform((v) => v === 'true'),
});
export const serviceListQuery = z.strictObject({
  env,
  status: z.enum(SERVICE_STATUSES).optional(),
  ...pagingParams(200, 50),
});
export const historyQuery = z.strictObject({ env, ...pagingParams(100, 20) });
export const rollbackQuery = z.strictObject({
  env,
  revision: z
    .string()
    .regex(/^v\d+\.\d+\.\d+$/, 'must be a revision like v1.4.2')
    .optional(),
});
export const weightBody = z.strictObject({ weight: z.number().int('must be a whole number').min(0).max(100) });
/** The most log lines a replica's answer holds. */
export const MAX_LOG_LINES = 1000;
export const logsQuery = z.strictObject({ env, lines: intParam(1, MAX_LOG_LINES, 100) });
export const deploymentAuditQuery = z.strictObject({
  ...pagingParams(200, 50),
  service: z.string().min(1).max(63).optional(),
  env: env.optional(),
  event: z.string().min(1).max(64).optional(),
  actor: z.string().min(1).max(254).optional(),
  since: dateTimeParam.optional(),
});

// Responses

const environment = z.enum(ENVIRONMENTS);
const serviceBase = {
  name: z.string(),
  environment,
  status: z.enum(SERVICE_STATUSES),
  image: z.string(),
  replicas: z.strictObject({
    desired: count,
    ready: count.describe('ready replicas of the current rollout (the canary’s, during one)'),
    by_revision: z
      .record(z.string(), count)
      .optional()
      .describe(
        'ready replicas of each revision that runs, e.g. {"v1.0.0": 2, "v1.1.0": 1} during a canary, as the runtime last reported them; absent until it reports them (never, for the simulated runtime)',
      ),
  }),
  current_revision: z.string(),
  last_deployed_at: timestamp,
  runtime: z.string().describe('the deployment runtime of the environment: "simulated" (the embedded default) or "docker"'),
  endpoint: z
    .string()
    .optional()
    .describe('http://HOST:PORT of the environment’s ingress, when its runtime runs one; a request there with `Host: <name>` reaches the service'),
  canary: z
    .strictObject({ revision: z.string(), weight: z.int().min(0).max(100) })
    .optional()
    .describe('while a canary is deployed'),
  status_message: z.string().optional().describe('when `status` is `failed`: why, as the runtime said (with the container’s last log lines)'),
};

/** A service as listed. */
export const service = named('Service', z.strictObject(serviceBase));
export type Service = z.infer<typeof service>;

/** A service as read alone. */
export const serviceDetail = named(
  'ServiceDetail',
  z.strictObject({ ...serviceBase, previous_revision: z.string().nullable(), gitops_sync_status: z.enum(['Synced', 'OutOfSync']) }),
);
export type ServiceDetail = z.infer<typeof serviceDetail>;

/** A service as a change (apply, rollback, promote) leaves it. */
export const serviceChange = named('ServiceChange', z.strictObject({ ...serviceBase, previous_revision: z.string().nullable(), dry_run: z.boolean() }));
export type ServiceChange = z.infer<typeof serviceChange>;

export const serviceDeleted = z.strictObject({ name: z.string(), environment: z.enum(ENVIRONMENTS), deleted: z.literal(true) });
export type ServiceDeleted = z.infer<typeof serviceDeleted>;

/** One replica's recent log lines, oldest first. */
export const replicaLogs = named(
  'ReplicaLogs',
  z.strictObject({
    replica: z.string().describe('the replica (a container name, for the docker runtime)'),
    revision: z.string(),
    lines: z.array(z.string()).max(MAX_LOG_LINES),
  }),
);
export type ReplicaLogs = z.infer<typeof replicaLogs>;

export const revision = named(
  'Revision',
  z.strictObject({
    revision: z.string(),
    image: z.string(),
    deployed_at: timestamp,
    deployed_by: z.string(),
    status: z.enum(['current', 'previous', 'available']),
  }),
);
export type Revision = z.infer<typeof revision>;

const trafficShare = { revision: z.string(), image: z.string(), weight: z.int().min(0).max(100) };
export const canaryState = named(
  'CanaryState',
  z.strictObject({
    service: z.string(),
    environment,
    canary_active: z.boolean(),
    stable: z.strictObject(trafficShare),
    canary: z.strictObject(trafficShare).nullable(),
  }),
);
export type CanaryState = z.infer<typeof canaryState>;

export const deploymentEvent = named(
  'DeploymentEvent',
  z.strictObject({
    id: z.int(),
    event: z.string().describe('service.applied, service.rolled_back, service.deleted, canary.weight_set, canary.halted, canary.promoted'),
    service: z.string(),
    environment,
    revision: z.string().nullable(),
    actor: z.string(),
    at: timestamp,
    details: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).describe('what the event changed'),
  }),
);
export type DeploymentEvent = z.infer<typeof deploymentEvent>;
