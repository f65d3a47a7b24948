/**
 * @module The cluster bus a node may use (docs/settings.md, TETHER_NATS_URL and TETHER_NATS_CREDS):
 * with credentials, or without any only on loopback. Checked once, with the other settings.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { ConfigError } from './config-error';

/**
 * The cluster bus as a node may use it: with credentials (a credentials file, or a user and
 * password in the URL), or without any only on a loopback address (docs/cluster.md, security).
 */
export function busSettings(
  url: string | undefined,
  creds: string | undefined,
  owner: 'server' | 'broker',
): { natsUrl: string | undefined; natsCreds: string | undefined } {
  if (creds !== undefined && url === undefined) throw new ConfigError(`${owner}: TETHER_NATS_CREDS is set but TETHER_NATS_URL is not`);
  const natsCreds = creds === undefined ? undefined : resolve(creds);
  if (natsCreds !== undefined && !existsSync(natsCreds)) throw new ConfigError(`${owner}: TETHER_NATS_CREDS: no such file: ${natsCreds}`);
  if (url !== undefined && natsCreds === undefined && !busHasPassword(url) && !busOnLoopback(url)) {
    throw new ConfigError(
      `${owner}: TETHER_NATS_URL: a bus without credentials is open to whoever reaches it; outside loopback give this node its credentials ` +
        '(TETHER_NATS_CREDS, written by `tether cluster nats-config`, docs/cluster.md)',
    );
  }
  return { natsUrl: url, natsCreds };
}

const busUrls = (url: string) => url.split(',').map((u) => new URL(u.trim()));
const busHasPassword = (url: string) => busUrls(url).every((u) => u.username !== '');
/** Every server of the bus is on this machine's loopback. */
export const busOnLoopback = (url: string): boolean => busUrls(url).every((u) => /^(127(\.\d{1,3}){3}|\[::1\]|localhost)$/i.test(u.hostname));
