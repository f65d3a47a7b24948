/**
 * @module Agent settings: flags, else environment, else defaults (each one listed in
 * docs/settings.md, agent). Parsed once by the entry point and passed down frozen.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import * as z from 'zod/mini';
import { AGENT_CONNECT_PATH, AGENT_STREAM_PATH } from '../shared/protocol/control-channel';
import { DEFAULT_FORWARD_ALLOW, parseAllowList, type ForwardPattern } from '../shared/protocol/port-forward/targets';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../shared/log';
import { describeProblems, problemsOf } from '../shared/zod-issues';

/**
 * The settings' schema, built for the one parse at start and dropped after it: kept at module
 * level, its zod objects (and the parser zod compiles for them) stayed in every idle agent's heap
 * (BENCHMARKS.md, "The agent as one file", third round).
 */
const settingsSchema = () =>
  z.object({
    server: z
      .string({ error: 'is required (--server URL or TETHER_SERVER)' })
      .check(
        z.refine(
          (s) => serverList(s).length > 0 && serverList(s).every((u) => /^(https?|wss?):\/\/[^/]/.test(u) && URL.canParse(u)),
          'must be an http(s):// or ws(s):// URL, or several comma-separated',
        ),
      ),
    deviceId: z
      .string({ error: 'is required (--device-id ID or TETHER_DEVICE_ID)' })
      .check(z.regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 characters of [A-Za-z0-9._-]')),
    token: z.string({ error: 'is required (--token T or TETHER_DEVICE_TOKEN)' }).check(z.minLength(1, 'must not be empty')),
    filesRoot: z._default(z.string().check(z.minLength(1)), '.'),
    logDirs: z._default(z.string().check(z.minLength(1)), '/var/log'),
    maxSessions: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(10_000)), 16),
    maxUploadBytes: z._default(z.coerce.number().check(z.int(), z.gte(0)), 0),
    warmShell: z._default(z.enum(['0', '1', 'true', 'false'], { error: 'must be 1 or 0' }), '1'),
    stateDir: z.optional(z.string().check(z.minLength(1))),
    forwardAllow: z._default(
      z.string().check(z.refine((s) => parseAllowList(s).ok, { error: (i) => `${(parseAllowList(String(i.input)) as { problem: string }).problem}` })),
      DEFAULT_FORWARD_ALLOW.join(','),
    ),
    forwardMaxConnections: z._default(z.coerce.number().check(z.int(), z.gte(1), z.lte(10_000)), 64),
    forwardIdleTimeout: z._default(z.coerce.number().check(z.int(), z.gte(0), z.lte(7 * 24 * 3600)), 600),
    logLevel: z.optional(z.enum(LOG_LEVELS, { error: 'must be debug, info, warn or error (TETHER_LOG_LEVEL)' })),
    logFormat: z.optional(z.enum(LOG_FORMATS, { error: 'must be json or text (TETHER_LOG_FORMAT)' })),
  });

/** The URLs of one server (a node). */
export interface AgentServer {
  /** The control channel URL, `ws(s)://host/v1/agent/connect`. */
  connectUrl: string;
  /** Where data streams are dialled, `ws(s)://host/v1/agent/stream`. */
  streamUrl: string;
}

/** The servers of `--server a,b` (repeated flags arrive joined by commas). */
const serverList = (text: string): string[] =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A server's URLs from its base URL (`http(s)://` or `ws(s)://`, with or without a path prefix). */
export function serverUrls(base: string): AgentServer {
  const url = new URL(base);
  url.protocol = url.protocol.replace(/^http/, 'ws');
  const prefix = url.pathname.replace(/\/+$/, '');
  url.search = '';
  url.hash = '';
  const at = (path: string) => {
    url.pathname = `${prefix}${path}`;
    return url.toString();
  };
  return { connectUrl: at(AGENT_CONNECT_PATH), streamUrl: at(AGENT_STREAM_PATH) };
}

export interface AgentConfig {
  /**
   * The servers, in the order given: the agent connects to the first, and moves to another when
   * one fails.
   */
  servers: readonly AgentServer[];
  deviceId: string;
  token: string;
  filesRoot: string;
  logDirs: string[];
  /** Streams served at once; more are refused with a clear message. */
  maxSessions: number;
  /** Bytes one upload may hold; 0 = no limit. */
  maxUploadBytes: number;
  /** Keep a login shell started and waiting, so a shell session starts at once. */
  warmShell: boolean;
  /** Where the agent keeps its own files (the journal of uploads in progress). */
  stateDir: string;
  /** Where port forwards may lead (`HOST:PORT` patterns, `*` any port); announced to the relay. */
  forwardAllow: readonly ForwardPattern[];
  /** TCP connections one port-forward session may hold at once. */
  forwardMaxConnections: number;
  /** Seconds a forwarded connection may go without a byte either way before it is reset; 0 = never. */
  forwardIdleTimeoutS: number;
  /** Logging as set; unset, it depends on whether stderr is a terminal (see `logSettings`). */
  logLevel?: LogLevel | undefined;
  logFormat?: LogFormat | undefined;
}

export interface AgentFlags {
  server?: string | undefined;
  deviceId?: string | undefined;
  token?: string | undefined;
  filesRoot?: string | undefined;
  logDirs?: string | undefined;
  maxSessions?: string | undefined;
  maxUploadBytes?: string | undefined;
  warmShell?: string | undefined;
  stateDir?: string | undefined;
  forwardAllow?: string | undefined;
  forwardMaxConnections?: string | undefined;
  forwardIdleTimeout?: string | undefined;
}

/** Merges flags over the environment; throws an Error listing every problem. */
export function loadAgentConfig(flags: AgentFlags, env: NodeJS.ProcessEnv): Readonly<AgentConfig> {
  const pick = (flag: string | undefined, name: string) => flag ?? (env[name] || undefined);
  const result = settingsSchema().safeParse({
    server: pick(flags.server, 'TETHER_SERVER'),
    deviceId: pick(flags.deviceId, 'TETHER_DEVICE_ID'),
    token: pick(flags.token, 'TETHER_DEVICE_TOKEN'),
    filesRoot: pick(flags.filesRoot, 'TETHER_FILES_ROOT'),
    logDirs: pick(flags.logDirs, 'TETHER_LOG_DIRS'),
    maxSessions: pick(flags.maxSessions, 'TETHER_MAX_SESSIONS'),
    maxUploadBytes: pick(flags.maxUploadBytes, 'TETHER_MAX_UPLOAD_BYTES'),
    warmShell: pick(flags.warmShell, 'TETHER_WARM_SHELL'),
    stateDir: pick(flags.stateDir, 'TETHER_STATE_DIR'),
    forwardAllow: pick(flags.forwardAllow, 'TETHER_FORWARD_ALLOW'),
    forwardMaxConnections: pick(flags.forwardMaxConnections, 'TETHER_FORWARD_MAX_CONNECTIONS'),
    forwardIdleTimeout: pick(flags.forwardIdleTimeout, 'TETHER_FORWARD_IDLE_TIMEOUT'),
    logLevel: pick(undefined, 'TETHER_LOG_LEVEL'),
    logFormat: pick(undefined, 'TETHER_LOG_FORMAT'),
  });
  if (!result.success) {
    const problems = problemsOf(result.error.issues, { unknownKey: 'unknown setting' }).map((p) =>
      // The operator's token in the agent's place: the most likely mix-up of two tether settings.
      p.path === 'token' && env.TETHER_TOKEN ? { ...p, message: `${p.message}; TETHER_TOKEN is the tether command's (a user's), not the agent's` } : p,
    );
    throw new Error(`invalid agent settings:\n  ${describeProblems(problems, '\n  ')}`);
  }
  const c = result.data;
  const servers = [
    ...new Map(
      serverList(c.server)
        .map((u) => serverUrls(u))
        .map((s) => [s.connectUrl, s]),
    ).values(),
  ];
  return Object.freeze({
    servers,
    deviceId: c.deviceId,
    token: c.token,
    filesRoot: resolve(c.filesRoot),
    logDirs: c.logDirs
      .split(':')
      .filter(Boolean)
      .map((d) => resolve(d)),
    maxSessions: c.maxSessions,
    maxUploadBytes: c.maxUploadBytes,
    warmShell: c.warmShell === '1' || c.warmShell === 'true',
    stateDir: resolve(c.stateDir ?? defaultStateDir(env)),
    forwardAllow: (parseAllowList(c.forwardAllow) as { value: ForwardPattern[] }).value,
    forwardMaxConnections: c.forwardMaxConnections,
    forwardIdleTimeoutS: c.forwardIdleTimeout,
    logLevel: c.logLevel,
    logFormat: c.logFormat,
  });
}

/**
 * The agent's logging: quiet and readable on a terminal (text at `warn`: an agent started with
 * `&` beside `tether shell` stays out of the shell's screen), JSON lines at `info` elsewhere
 * (services, journald). `TETHER_LOG_LEVEL` and `TETHER_LOG_FORMAT` set either explicitly.
 */
export function logSettings(config: Readonly<AgentConfig>, stderrIsTerminal: boolean): { level: LogLevel; format: LogFormat } {
  return {
    level: config.logLevel ?? (stderrIsTerminal ? 'warn' : 'info'),
    format: config.logFormat ?? (stderrIsTerminal ? 'text' : 'json'),
  };
}

/** systemd's StateDirectory=, else the XDG state dir: `~/.local/state/tether-agent`. */
function defaultStateDir(env: NodeJS.ProcessEnv): string {
  const systemd = env.STATE_DIRECTORY?.split(':')[0];
  if (systemd) return systemd;
  return join(env.XDG_STATE_HOME || join(homedir(), '.local', 'state'), 'tether-agent');
}
