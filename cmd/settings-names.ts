/**
 * @module Every `TETHER_*` environment variable tether knows (docs/settings.md), with the
 * components that read it. One shell may hold the variables of several components (an operator
 * runs the server and the client; a device's agent starts shells holding its own), so a
 * component ignores the others' variables and stops only on names nobody knows: misspellings.
 */
import { closestName } from '../shared/closest-name';
import type { Problem } from '../shared/zod-issues';

export type SettingOwner =
  | 'server'
  /** `tether broker`, an edge node of a cluster. */
  | 'broker'
  | 'agent'
  | 'client'
  /** Named for a coming feature (its name is fixed already), read by nothing yet. */
  | 'reserved';

export const ENV_PREFIX = 'TETHER_';

/** Every known variable and who reads it. */
export const KNOWN_SETTINGS: Readonly<Record<string, readonly SettingOwner[]>> = Object.freeze({
  TETHER_LISTEN: ['server', 'broker'],
  TETHER_DATA_DIR: ['server'],
  TETHER_PUBLIC_URL: ['server', 'broker'],
  TETHER_BOOTSTRAP_TOKEN: ['server'],
  TETHER_DEPLOY_RUNTIME: ['server'],
  TETHER_DEPLOY_RUNTIME_DEV: ['server'],
  TETHER_DEPLOY_RUNTIME_STAGING: ['server'],
  TETHER_DEPLOY_RUNTIME_PROD: ['server'],
  TETHER_INGRESS_DEV: ['server'],
  TETHER_INGRESS_STAGING: ['server'],
  TETHER_INGRESS_PROD: ['server'],
  TETHER_ROLLOUT_DEADLINE_SECONDS: ['server'],
  TETHER_SECRETS_DIR: ['server'],
  TETHER_SIM_REPLICA_MS: ['server'],
  TETHER_LOG_LEVEL: ['server', 'broker', 'agent'],
  TETHER_LOG_FORMAT: ['agent'],
  TETHER_HEARTBEAT_MS: ['server', 'broker'],
  TETHER_HEADERS_TIMEOUT_MS: ['server', 'broker'],
  TETHER_REQUEST_TIMEOUT_MS: ['server', 'broker'],
  TETHER_CONSOLE_ORIGINS: ['server', 'broker'],
  TETHER_SERVER: ['agent', 'client'],
  TETHER_DEVICE_ID: ['agent'],
  TETHER_DEVICE_TOKEN: ['agent'],
  TETHER_FILES_ROOT: ['agent'],
  TETHER_LOG_DIRS: ['agent'],
  TETHER_MAX_SESSIONS: ['agent'],
  TETHER_MAX_UPLOAD_BYTES: ['agent'],
  TETHER_STATE_DIR: ['agent'],
  TETHER_WARM_SHELL: ['agent'],
  TETHER_FORWARD_ALLOW: ['agent'],
  TETHER_FORWARD_MAX_CONNECTIONS: ['agent'],
  TETHER_FORWARD_IDLE_TIMEOUT: ['agent'],
  // Set by the agent in every shell it starts (the shell's exit marker), so a `tether` command
  // run inside a remote shell finds it in its environment.
  TETHER_EXIT_NONCE: ['agent'],
  TETHER_TOKEN: ['client'],
  TETHER_DATABASE_URL: ['server'],
  TETHER_NATS_URL: ['server', 'broker'],
  TETHER_NATS_CREDS: ['server', 'broker'],
  TETHER_RECORD_SHELL: ['server'],
  TETHER_RECORD_INPUT: ['server'],
  TETHER_RECORDING_MAX_BYTES: ['server'],
  TETHER_RECORDING_RETENTION_DAYS: ['server'],
  TETHER_SESSION_IDLE_SECONDS: ['server'],
  TETHER_ACCESS_REQUEST_TTL_SECONDS: ['server'],
  TETHER_SESSION_WARNINGS: ['server', 'broker'],
  TETHER_RECORDINGS_MAX_TOTAL_BYTES: ['server'],
  TETHER_RECORDINGS_MIN_FREE_BYTES: ['server'],
});

/** The variables `owner` reads. */
export const settingsOf = (owner: SettingOwner): string[] => Object.keys(KNOWN_SETTINGS).filter((name) => KNOWN_SETTINGS[name]!.includes(owner));

/** `; did you mean X?` when a known name is close to `name`, else ''. */
export function didYouMean(name: string, candidates: readonly string[]): string {
  const strip = (n: string) => (n.toUpperCase().startsWith(ENV_PREFIX) ? n.slice(ENV_PREFIX.length) : n);
  const bare = candidates.map(strip);
  const match = closestName(strip(name), bare);
  return match === undefined ? '' : `; did you mean ${candidates[bare.indexOf(match)]}?`;
}

/**
 * One problem per `TETHER_*` variable in `env` that no component knows, naming the closest
 * known one: TETHER_LISTN gets "unknown setting; did you mean TETHER_LISTEN?".
 */
export function unknownSettings(env: NodeJS.ProcessEnv): Problem[] {
  const known = Object.keys(KNOWN_SETTINGS);
  return Object.keys(env)
    .filter((name) => name.startsWith(ENV_PREFIX) && !Object.hasOwn(KNOWN_SETTINGS, name))
    .sort()
    .map((name) => ({ path: name, message: `unknown setting${didYouMean(name, known)}` }));
}

/** Who reads a settings file: the server or a broker node. */
export type SettingsOwner = 'server' | 'broker';

/** A setting's name in the environment. */
export const envName = (key: string): string => `${ENV_PREFIX}${key.toUpperCase()}`;

function whyNotASetting(key: string, known: readonly string[], owner: SettingsOwner): string {
  const owners = KNOWN_SETTINGS[envName(key)]?.filter((o) => o !== 'reserved');
  if (owners === undefined) return `unknown setting${didYouMean(key, known)}`;
  if (owners.length === 0) return `reserved for a coming feature; tether ${owner} does not read it yet`;
  return `a setting of the ${owners.join(' and the ')}, not of tether ${owner}`;
}

/**
 * The file's keys that are not server settings, each named as in the other problems; a key
 * another component reads is said to be theirs, any other names the closest setting.
 */
export function unknownFileKeys(fromFile: Record<string, unknown>, known: readonly string[], owner: SettingsOwner): Problem[] {
  return Object.keys(fromFile)
    .filter((key) => !known.includes(key))
    .map((key) => {
      const path = key.toUpperCase().startsWith(ENV_PREFIX) ? key : `${key} (${envName(key)})`;
      return { path, message: whyNotASetting(key, known, owner) };
    });
}
