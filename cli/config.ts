/**
 * @module Where the client finds its server and token: `TETHER_SERVER` / `TETHER_TOKEN`, else
 * `$XDG_CONFIG_HOME/tether/config.json` (default `~/.config`), written with mode 0600
 * (docs/settings.md, command-line client).
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { CliError } from './errors';

const fileSchema = z.object({
  server: z.string().optional(),
  token: z.string().optional(),
  username: z.string().optional(),
  expires_at: z.string().nullable().optional(),
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

/** Writes the config atomically, readable by its owner only. */
export function writeConfig(env: NodeJS.ProcessEnv, config: StoredConfig): string {
  const path = configPath(env);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const temp = `${path}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  chmodSync(temp, 0o600);
  renameSync(temp, path);
  return path;
}

/** The server and token to use; explains what to do when either is missing. */
export function credentials(env: NodeJS.ProcessEnv): Credentials {
  const stored = readConfig(env);
  const server = env.TETHER_SERVER || stored.server;
  const token = env.TETHER_TOKEN || stored.token;
  if (!server) throw new CliError('no server known: run `tether login --server URL --username NAME` or set TETHER_SERVER', 'not_logged_in');
  if (!token) throw new CliError('not logged in: run `tether login --server URL --username NAME` or set TETHER_TOKEN', 'not_logged_in');
  return { server: server.replace(/\/+$/, ''), token };
}
