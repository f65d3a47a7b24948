/**
 * @module Where the client finds its server and token: `TETHER_SERVER` / `TETHER_TOKEN`, else
 * `$XDG_CONFIG_HOME/tether/config.json` (default `~/.config`), written with mode 0600
 * (docs/settings.md, command-line client).
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import * as z from 'zod/mini';
import { CliError } from './errors';

// Fields this client does not know are kept: a file shared with other tools or versions survives.
const fileSchema = z.looseObject({
  server: z.optional(z.string()),
  token: z.optional(z.string()),
  /** The stored token's id, to revoke it (`tether logout`). */
  token_id: z.optional(z.string()),
  username: z.optional(z.string()),
  expires_at: z.optional(z.nullable(z.string())),
});
export type StoredConfig = z.infer<typeof fileSchema>;

export interface Credentials {
  server: string;
  token: string;
}

export function configPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'tether', 'config.json');
}

export function readConfig(env: NodeJS.ProcessEnv): StoredConfig {
  const path = configPath(env);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return {};
  }
  try {
    return fileSchema.parse(JSON.parse(text));
  } catch {
    throw new CliError(`${path} is not a valid tether config; run tether login again or remove it`, 'bad_config');
  }
}

/** Writes the config atomically, readable by its owner only unless `mode` says otherwise. */
export function writeConfig(env: NodeJS.ProcessEnv, config: StoredConfig, mode = 0o600): string {
  const path = configPath(env);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode });
  chmodSync(temp, mode);
  renameSync(temp, path);
  return path;
}

/** Removes the stored token (and its id and expiry), keeping every other field and the file's mode. */
export function forgetToken(env: NodeJS.ProcessEnv): string {
  const { token: _token, token_id: _id, expires_at: _expires, ...rest } = readConfig(env);
  return writeConfig(env, rest, statSync(configPath(env)).mode & 0o777);
}

/** The `tether login` command line to suggest: the flags the stored config cannot fill in. */
export function loginHint(env: NodeJS.ProcessEnv, stored: StoredConfig): string {
  const server = env.TETHER_SERVER || stored.server ? '' : ' --server URL';
  const user = stored.username ? '' : ' --username NAME';
  return `tether login${server}${user}`;
}

/** The server and token to use; explains what to do when either is missing. */
export function credentials(env: NodeJS.ProcessEnv): Credentials {
  const stored = readConfig(env);
  const server = env.TETHER_SERVER || stored.server;
  const token = env.TETHER_TOKEN || stored.token;
  if (!server) throw new CliError(`no server known: run \`${loginHint(env, stored)}\` or set TETHER_SERVER`, 'not_logged_in');
  if (!token) throw new CliError(`not logged in: run \`${loginHint(env, stored)}\` or set TETHER_TOKEN`, 'not_logged_in');
  return { server: server.replace(/\/+$/, ''), token };
}
