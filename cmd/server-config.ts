/**
 * @module Server settings (docs/settings.md): environment variables, or the same names
 * lower-cased without `TETHER_` in a YAML file given by `--config`; the environment wins over
 * the file. Parsed and checked once at start-up, then frozen and passed down.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { problemsOf } from '../shared/zod-issues';
import { LOG_LEVELS } from '../shared/log';
import { envName, unknownFileKeys, unknownSettings, type SettingsOwner } from './settings-names';
import { DEFAULT_DATA_DIR } from './server-defaults';
import { busSettings } from './bus-settings';
import { ConfigError } from './config-error';
import { sessionWarnings } from './session-warnings';

/** On or off: `1`/`0`, `true`/`false` (environment), or a YAML boolean. */
const flag = z.union([z.boolean(), z.enum(['1', '0', 'true', 'false'], { error: 'must be 1 or 0' }).transform((v) => v === '1' || v === 'true')]);

/** `nats://host:port` (user and password allowed), or several, comma-separated. */
const natsUrl = (requiredError?: string) =>
  z
    .string(requiredError === undefined ? undefined : { error: requiredError })
    .refine(
      (text) => text.split(',').every((u) => /^(nats|tls):\/\/[^/\s]+$/.test(u.trim()) && URL.canParse(u.trim())),
      'must be nats://host:port (or tls://), or several of them comma-separated',
    );

/** `postgres://USER[:PASSWORD]@HOST:PORT/DATABASE[?options]` (or `postgresql://`). */
const isDatabaseUrl = (text: string) => /^postgres(ql)?:\/\/[^/\s]+\/[^/\s?]+(\?\S*)?$/.test(text) && URL.canParse(text);

/** The deployment runtimes (docs/deployments.md). */
const RUNTIMES = ['simulated', 'docker'] as const;
export type RuntimeName = (typeof RUNTIMES)[number];
const listenAddress = z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/, 'must be host:port, e.g. 127.0.0.1:8090');

/** Settings the server and a node share. */
const common = {
  listen: z
    .string()
    .regex(/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/, 'must be host:port, e.g. 127.0.0.1:8080 or [::1]:8080')
    .default('127.0.0.1:8080'),
  public_url: z.url({ protocol: /^https?$/ }).optional(),
  log_level: z.enum(LOG_LEVELS).default('info'),
  /** The agent heartbeat interval (tests shorten it). */
  heartbeat_ms: z.coerce.number().int().min(50).max(600_000).default(20_000),
  /** How long a client may take to send its request headers. */
  headers_timeout_ms: z.coerce.number().int().min(100).max(600_000).default(15_000),
  /** How long a client may take to send a whole request. */
  request_timeout_ms: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  /** Warnings before a session's end (s): notices to its stream's client, and `session.expiring` events. */
  session_warnings: sessionWarnings,
  /** Browser origins besides the server's own whose pages may open session streams. */
  console_origins: z
    .string()
    .default('')
    .transform((text, ctx) => {
      const origins = text
        .split(',')
        .map((o) => o.trim())
        .filter(Boolean);
      for (const o of origins) {
        if (!URL.canParse(o) || new URL(o).origin !== o)
          ctx.addIssue({ code: 'custom', message: `${JSON.stringify(o)} is not an origin (scheme://host[:port], nothing after)` });
      }
      return origins;
    }),
};

/** Every setting of `tether server`, by its name in a config file. */
const fileSchema = z.strictObject({
  ...common,
  data_dir: z.string().min(1).default(DEFAULT_DATA_DIR),
  /** PostgreSQL, shared by peers (CONTRACT 10.1); unset: SQLite in the data dir. */
  database_url: z.string().refine(isDatabaseUrl, 'must be postgres://USER[:PASSWORD]@HOST:PORT/DATABASE').optional(),
  bootstrap_token: z
    .string()
    .regex(/^[A-Za-z0-9\-._~+/]{16,256}$/, 'must be 16-256 characters of [A-Za-z0-9-._~+/]')
    .optional(),
  /** What runs services: `simulated` (nothing runs) or `docker` (Docker Engine at DOCKER_HOST); per environment below. */
  deploy_runtime: z.enum(RUNTIMES).default('simulated'),
  deploy_runtime_dev: z.enum(RUNTIMES).optional(),
  deploy_runtime_staging: z.enum(RUNTIMES).optional(),
  deploy_runtime_prod: z.enum(RUNTIMES).optional(),
  /** Where each environment's ingress listens (the `docker` runtime); port 0 picks a free one. */
  ingress_dev: listenAddress.default('127.0.0.1:0'),
  ingress_staging: listenAddress.default('127.0.0.1:0'),
  ingress_prod: listenAddress.default('127.0.0.1:0'),
  /** A rollout whose replicas are not ready within this many seconds fails (the previous revision keeps serving). */
  rollout_deadline_seconds: z.coerce.number().int().min(1).max(86_400).default(300),
  /** Where `secrets.vault[].path` files are read from (default `<data dir>/secrets`). */
  secrets_dir: z.string().min(1).optional(),
  sim_replica_ms: z.coerce.number().int().min(0).max(3_600_000).default(200),
  /** Record shell sessions (asciicast v2 in the data dir). */
  record_shell: flag.default(true),
  /** Record keystrokes too (they hold passwords typed at prompts). */
  record_input: flag.default(false),
  /** The largest compressed recording of one session; past it the recording is `truncated`. */
  recording_max_bytes: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(2 ** 40)
    .default(64 * 1024 * 1024),
  /** Recordings older than this many days are deleted; 0 keeps them forever. */
  recording_retention_days: z.coerce.number().int().min(0).max(36_500).default(90),
  /** Every stored recording together, compressed; past it new recordings are kept empty and `truncated`. */
  recordings_max_total_bytes: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .max(2 ** 50)
    .default(10 * 2 ** 30),
  /** Free space the data dir's filesystem keeps: below it, recordings stop and new ones are refused. 0: no floor. */
  recordings_min_free_bytes: z.coerce
    .number()
    .int()
    .min(0)
    .max(2 ** 50)
    .default(2 ** 30),
  /** A session with no client connected to its stream this long (s) closes (`idle`). */
  session_idle_seconds: z.coerce.number().int().min(1).max(28_800).default(300),
  /** How long an access request stays pending (s) before it ends `expired` (docs/access.md). */
  access_request_ttl_seconds: z.coerce.number().int().min(60).max(2_592_000).default(86_400),
  /** The cluster bus: set, this server is a cluster's control node (docs/cluster.md). */
  nats_url: natsUrl().optional(),
  /** This node's NATS credentials (`tether cluster nats-config` writes them). */
  nats_creds: z.string().min(1).optional(),
});

/** Every setting of `tether broker` (an edge node: no database, so none of the data settings). */
const edgeSchema = z.strictObject({
  ...common,
  public_url: z.url({ protocol: /^https?$/, error: 'is required: the URL agents and clients reach this node at (http(s)://host:port)' }),
  nats_url: natsUrl('is required: the cluster bus, e.g. nats://127.0.0.1:4222'),
  nats_creds: z.string().min(1).optional(),
});

export type ServerSettings = z.output<typeof fileSchema>;

export interface ServerConfig extends Omit<
  ServerSettings,
  | 'listen'
  | 'public_url'
  | 'nats_url'
  | 'nats_creds'
  | 'deploy_runtime_dev'
  | 'deploy_runtime_staging'
  | 'deploy_runtime_prod'
  | 'ingress_dev'
  | 'ingress_staging'
  | 'ingress_prod'
  | 'secrets_dir'
> {
  /** The runtime of each environment. */
  runtimes: Record<'dev' | 'staging' | 'prod', RuntimeName>;
  /** Where each environment's ingress listens (host:port). */
  ingress: Record<'dev' | 'staging' | 'prod', string>;
  secrets_dir: string;
  /** The Docker Engine (`DOCKER_HOST`). */
  docker_host: string;
  host: string;
  port: number;
  /** Base URL clients use, when set; otherwise derived from the listening address. */
  publicUrl: string | undefined;
  /** The cluster bus; set, this server is a cluster's control node. */
  natsUrl: string | undefined;
  /** The node's NATS credentials file (absolute), when the bus asks for them. */
  natsCreds: string | undefined;
}

/** `tether broker`'s settings: an edge node of a cluster. */
export interface EdgeConfig {
  host: string;
  port: number;
  publicUrl: string;
  natsUrl: string;
  natsCreds: string | undefined;
  log_level: ServerSettings['log_level'];
  heartbeat_ms: number;
  headers_timeout_ms: number;
  request_timeout_ms: number;
  console_origins: string[];
  session_warnings: number[];
}

export { ConfigError } from './config-error';

/** Every setting's name in a config file (`TETHER_` + upper case in the environment). */
export const SETTING_NAMES = Object.keys(fileSchema.shape) as Array<keyof ServerSettings>;
/** Every setting of `tether broker`. */
export const EDGE_SETTING_NAMES = Object.keys(edgeSchema.shape);

type Owner = SettingsOwner;

/** Reads `schema`'s settings from an optional YAML file and the environment. Throws ConfigError. */
function loadSettings<S extends z.ZodObject>(schema: S, owner: Owner, env: NodeJS.ProcessEnv, configFile?: string): z.output<S> {
  const names = Object.keys(schema.shape);
  let fromFile: Record<string, unknown> = {};
  if (configFile) {
    let parsed: unknown;
    try {
      parsed = parseYaml(readFileSync(configFile, 'utf8'));
    } catch (err) {
      throw new ConfigError(`cannot read config file ${configFile}: ${(err as Error).message}`);
    }
    if (parsed !== null && parsed !== undefined && (typeof parsed !== 'object' || Array.isArray(parsed))) {
      throw new ConfigError(`config file ${configFile} must hold a YAML mapping of settings`);
    }
    fromFile = (parsed ?? {}) as Record<string, unknown>;
  }
  const problems = [...unknownSettings(env), ...unknownFileKeys(fromFile, names, owner)];
  const merged: Record<string, unknown> = {};
  for (const name of names) {
    const value = env[envName(name)];
    if (value !== undefined && value !== '') merged[name] = value;
    else if (Object.hasOwn(fromFile, name)) merged[name] = fromFile[name];
  }
  const result = schema.safeParse(merged);
  if (!result.success) {
    for (const p of problemsOf(result.error.issues)) problems.push({ ...p, path: `${p.path} (${envName(p.path)})` });
  }
  if (!result.success || problems.length > 0) {
    throw new ConfigError(`invalid ${owner} settings:\n${problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`);
  }
  return result.data;
}

/** The host and port of `listen`. */
function hostPort(listen: string, owner: Owner): { host: string; port: number } {
  const m = /^\[?(.*?)\]?:(\d+)$/.exec(listen)!;
  const port = Number(m[2]);
  if (port > 65535) throw new ConfigError(`invalid ${owner} settings:\n  listen (TETHER_LISTEN): port ${port} is out of range`);
  return { host: m[1]!, port };
}

/** Reads the server's settings from an optional YAML file and the environment. Throws ConfigError. */
export function loadServerConfig(env: NodeJS.ProcessEnv, configFile?: string): Readonly<ServerConfig> {
  const s = loadSettings(fileSchema, 'server', env, configFile);
  return Object.freeze({
    ...hostPort(s.listen, 'server'),
    data_dir: resolve(s.data_dir),
    database_url: s.database_url,
    publicUrl: s.public_url?.replace(/\/+$/, ''),
    bootstrap_token: s.bootstrap_token,
    deploy_runtime: s.deploy_runtime,
    runtimes: {
      dev: s.deploy_runtime_dev ?? s.deploy_runtime,
      staging: s.deploy_runtime_staging ?? s.deploy_runtime,
      prod: s.deploy_runtime_prod ?? s.deploy_runtime,
    },
    ingress: { dev: s.ingress_dev, staging: s.ingress_staging, prod: s.ingress_prod },
    rollout_deadline_seconds: s.rollout_deadline_seconds,
    secrets_dir: resolve(s.secrets_dir ?? resolve(s.data_dir, 'secrets')),
    docker_host: env.DOCKER_HOST || 'unix:///var/run/docker.sock',
    sim_replica_ms: s.sim_replica_ms,
    session_idle_seconds: s.session_idle_seconds,
    access_request_ttl_seconds: s.access_request_ttl_seconds,
    session_warnings: s.session_warnings,
    log_level: s.log_level,
    heartbeat_ms: s.heartbeat_ms,
    headers_timeout_ms: s.headers_timeout_ms,
    request_timeout_ms: s.request_timeout_ms,
    record_shell: s.record_shell,
    record_input: s.record_input,
    recording_max_bytes: s.recording_max_bytes,
    recording_retention_days: s.recording_retention_days,
    recordings_max_total_bytes: s.recordings_max_total_bytes,
    recordings_min_free_bytes: s.recordings_min_free_bytes,
    console_origins: s.console_origins,
    ...busSettings(s.nats_url, s.nats_creds, 'server'),
  });
}

/** Reads `tether broker`'s settings from an optional YAML file and the environment. Throws ConfigError. */
export function loadEdgeConfig(env: NodeJS.ProcessEnv, configFile?: string): Readonly<EdgeConfig> {
  const s = loadSettings(edgeSchema, 'broker', env, configFile);
  return Object.freeze({
    ...hostPort(s.listen, 'broker'),
    publicUrl: s.public_url.replace(/\/+$/, ''),
    ...(busSettings(s.nats_url, s.nats_creds, 'broker') as { natsUrl: string; natsCreds: string | undefined }),
    log_level: s.log_level,
    heartbeat_ms: s.heartbeat_ms,
    headers_timeout_ms: s.headers_timeout_ms,
    request_timeout_ms: s.request_timeout_ms,
    console_origins: s.console_origins,
    session_warnings: s.session_warnings,
  });
}
