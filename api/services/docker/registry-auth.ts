/**
 * @module Registry credentials for pulls, as Docker's own client keeps them: the `auths` of
 * `~/.docker/config.json` (`auth` = base64 `user:password`, or `username`/`password`, or an
 * `identitytoken`). Credential helpers (`credsStore`, `credHelpers`) are not consulted. An
 * image without an entry for its registry is pulled anonymously.
 */
import { readFile } from 'node:fs/promises';

export interface AuthConfig {
  username?: string;
  password?: string;
  identitytoken?: string;
  serveraddress: string;
}

interface AuthEntry {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
}

/** The registry host of an image reference (`host[:port]/repo/name:tag`); Docker Hub for a short one. */
export function registryOf(image: string): string {
  const first = image.split('/')[0]!;
  const isHost = image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  return isHost ? first : 'docker.io';
}

/** The host an `auths` key names: keys may be bare hosts or URLs (`https://index.docker.io/v1/`). */
function hostOfKey(key: string): string {
  const host = key.replace(/^[a-z]+:\/\//, '').split('/')[0]!;
  return host === 'index.docker.io' || host === 'registry-1.docker.io' ? 'docker.io' : host;
}

function fromEntry(entry: AuthEntry, serveraddress: string): AuthConfig | undefined {
  if (entry.identitytoken) return { identitytoken: entry.identitytoken, serveraddress };
  if (entry.auth) {
    const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1), serveraddress };
  }
  if (entry.username && entry.password) return { username: entry.username, password: entry.password, serveraddress };
  return undefined;
}

/** The credentials for pulling `image`, when the config file has some for its registry. */
export async function authFor(configFile: string, image: string): Promise<AuthConfig | undefined> {
  let config: { auths?: Record<string, AuthEntry> };
  try {
    config = JSON.parse(await readFile(configFile, 'utf8')) as typeof config;
  } catch {
    return undefined; // no config (or an unreadable one): anonymous pulls, as the docker CLI does
  }
  const registry = registryOf(image);
  for (const [key, entry] of Object.entries(config.auths ?? {})) {
    if (hostOfKey(key) === registry && entry && typeof entry === 'object') return fromEntry(entry, key);
  }
  return undefined;
}
