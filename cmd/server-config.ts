/**
 * @module Server settings (docs/settings.md): environment variables, or the same names
 * lower-cased without `TETHER_` in a YAML file given by `--config`; the environment wins over
 * the file. Parsed and checked once at start-up, then frozen and passed down.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { problemsOf, type Problem } from '../shared/zod-issues';
import { LOG_LEVELS } from '../shared/log';
import { didYouMean, ENV_PREFIX, KNOWN_SETTINGS, unknownSettings } from '../shared/settings-names';
import { DEFAULT_DATA_DIR } from './server-defaults';

/** On or off: `1`/`0`, `true`/`false` (environment), or a YAML boolean. */
const flag = z.union([z.boolean(), z.enum(['1', '0', 'true', 'false'], { error: 'must be 1 or 0' }).transform((v) => v === '1' || v === 'true')]);

/** Every setting, by its name in a config file. */
const fileSchema = z.strictObject({
  listen: z
    .string()
    .regex(/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/, 'must be host:port, e.g. 127.0.0.1:8080 or [::1]:8080')
    .default('127.0.0.1:8080'),
  data_dir: z.string().min(1).default(DEFAULT_DATA_DIR),
  public_url: z.url({ protocol: /^https?$/ }).optional(),
  bootstrap_token: z
    .string()
    .regex(/^[A-Za-z0-9\-._~+/]{16,256}$/, 'must be 16-256 characters of [A-Za-z0-9-._~+/]')
    .optional(),
  deploy_runtime: z.enum(['simulated']).default('simulated'),
  sim_replica_ms: z.coerce.number().int().min(0).max(3_600_000).default(200),
  log_level: z.enum(LOG_LEVELS).default('info'),
  /** The agent heartbeat interval (tests shorten it). */
  heartbeat_ms: z.coerce.number().int().min(50).max(600_000).default(20_000),
  /** How long a client may take to send its request headers. */
  headers_timeout_ms: z.coerce.number().int().min(100).max(600_000).default(15_000),
  /** How long a client may take to send a whole request. */
  request_timeout_ms: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  /** Record shell sessions (asciicast v2 in the data dir). */
  record_shell: flag.default(true),
  /** Record keystrokes too (they hold passwords typed at prompts). */
  record_input: flag.default(false),
  /** The largest compressed recording of one session; past it the recording is `truncated`. */
  recording_max_bytes: z.coerce.number().int().min(64 * 1024).max(2 ** 40).default(64 * 1024 * 1024),
  /** Recordings older than this many days are deleted; 0 keeps them forever. */
  recording_retention_days: z.coerce.number().int().min(0).max(36_500).default(90),
  /** Browser origins besides the server's own whose pages may open session streams. */
  console_origins: z
    .string()
    .default('')
    .transform((text, ctx) => {
      const origins = text.split(',').map((o) => o.trim()).filter(Boolean);
      for (const o of origins) {
        if (!URL.canParse(o) || new URL(o).origin !== o) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(o)} is not an origin (scheme://host[:port], nothing after)` });
      }
      return origins;
    }),
});

export type ServerSettings = z.output<typeof fileSchema>;

export interface ServerConfig extends Omit<ServerSettings, 'listen' | 'public_url'> {
  host: string;
  port: number;
  /** Base URL clients use, when set; otherwise derived from the listening address. */
  publicUrl: string | undefined;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Every setting's name in a config file (`TETHER_` + upper case in the environment). */
export const SETTING_NAMES = Object.keys(fileSchema.shape) as Array<keyof ServerSettings>;


const envName = (key: string) => `${ENV_PREFIX}${key.toUpperCase()}`;

function whyNotASetting(key: string, known: readonly string[]): string {
  const owners = KNOWN_SETTINGS[envName(key)]?.filter((owner) => owner !== 'reserved');
  if (owners === undefined) return `unknown setting${didYouMean(key, known)}`;
  if (owners.length === 0) return 'reserved for a coming feature; tether server does not read it yet';
  return `a setting of the ${owners.join(' and the ')}, not of tether server`;
}

/**
 * The file's keys that are not server settings, each named as in the other problems; a key
 * another component reads is said to be theirs, any other names the closest setting.
 */
function unknownFileKeys(fromFile: Record<string, unknown>): Problem[] {
  const known: readonly string[] = SETTING_NAMES;
  return Object.keys(fromFile)
    .filter((key) => !known.includes(key))
    .map((key) => {
      const path = key.toUpperCase().startsWith(ENV_PREFIX) ? key : `${key} (${envName(key)})`;
      return { path, message: whyNotASetting(key, known) };
    });
}

/** Reads settings from an optional YAML file and the environment. Throws ConfigError. */
export function loadServerConfig(env: NodeJS.ProcessEnv, configFile?: string): Readonly<ServerConfig> {
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
  const problems = [...unknownSettings(env), ...unknownFileKeys(fromFile)];
  const merged: Record<string, unknown> = {};
  for (const name of SETTING_NAMES) {
    const value = env[envName(name)];
    if (value !== undefined && value !== '') merged[name] = value;
    else if (Object.hasOwn(fromFile, name)) merged[name] = fromFile[name];
  }
  const result = fileSchema.safeParse(merged);
  if (!result.success) {
    for (const p of problemsOf(result.error.issues)) problems.push({ ...p, path: `${p.path} (${envName(p.path)})` });
  }
  if (!result.success || problems.length > 0) {
    throw new ConfigError(`invalid server settings:\n${problems.map((p) => `  ${p.path}: ${p.message}`).join('\n')}`);
  }
  const s = result.data;
  const m = /^\[?(.*?)\]?:(\d+)$/.exec(s.listen)!;
  const port = Number(m[2]);
  if (port > 65535) throw new ConfigError(`invalid server settings:\n  listen (TETHER_LISTEN): port ${port} is out of range`);
  return Object.freeze({
    host: m[1]!,
    port,
    data_dir: resolve(s.data_dir),
    publicUrl: s.public_url?.replace(/\/+$/, ''),
    bootstrap_token: s.bootstrap_token,
    deploy_runtime: s.deploy_runtime,
    sim_replica_ms: s.sim_replica_ms,
    log_level: s.log_level,
    heartbeat_ms: s.heartbeat_ms,
    headers_timeout_ms: s.headers_timeout_ms,
    request_timeout_ms: s.request_timeout_ms,
    record_shell: s.record_shell,
    record_input: s.record_input,
    recording_max_bytes: s.recording_max_bytes,
    recording_retention_days: s.recording_retention_days,
    console_origins: s.console_origins,
  });
}
