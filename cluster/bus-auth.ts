/**
 * @module How a node authenticates to the bus (docs/cluster.md, security): its credentials file
 * (which also names the node), or the user and password of the bus URL; and the URL as a log line
 * may show it.
 */
import { readFileSync } from 'node:fs';
import { credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';

/** A bus URL fit for a log line: no password. */
export function redactedUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/g, '//$1:***@');
}

/**
 * How to authenticate to the bus: the credentials file, or the user and password of the URL
 * (the NATS client does not read them from a URL itself, and would take a password of digits
 * for a port). `open`: neither, so anyone who reaches the bus may speak on it.
 */
export function busAuth(url: string, credsFile: string | undefined): { servers: string[]; auth: Partial<ConnectionOptions>; open: boolean } {
  const urls = url.split(',').map((u) => new URL(u.trim()));
  const servers = urls.map((u) => `${u.protocol}//${u.host}`);
  if (credsFile !== undefined) return { servers, auth: { authenticator: credsAuthenticator(readFileSync(credsFile)) }, open: false };
  const withUser = urls.find((u) => u.username !== '');
  if (withUser) return { servers, auth: { user: decodeURIComponent(withUser.username), pass: decodeURIComponent(withUser.password) }, open: false };
  return { servers, auth: {}, open: true };
}

/** The node name in a credentials file (its user JWT's `name`), or undefined when it has none. */
export function credsName(credsFile: string): string | undefined {
  const jwt = /-----BEGIN NATS USER JWT-----\s*([A-Za-z0-9_.-]+)\s*------END NATS USER JWT------/.exec(readFileSync(credsFile, 'utf8'))?.[1];
  const payload = jwt?.split('.')[1];
  if (!payload) return undefined;
  try {
    const name = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { name?: unknown }).name;
    return typeof name === 'string' ? name : undefined;
  } catch {
    return undefined;
  }
}
