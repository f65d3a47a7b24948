/**
 * @module The servers of a route, checked before any of them reaches the runtime API, where a
 * space or a semicolon in a name would split a command.
 */
import { isIP } from 'node:net';
import type { RouteServer } from './backends';
import { IngressError } from './errors';
import { MAX_WEIGHT } from './weights';

/** HAProxy's server names (Docker's container names fit). */
const SERVER_NAME = /^[A-Za-z0-9][\w.-]{0,99}$/;
const ADDRESS = /^(?:(\d{1,3}(?:\.\d{1,3}){3})|\[([0-9a-fA-F:.]+)\]):(\d{1,5})$/;

function invalid(message: string): IngressError {
  return new IngressError('invalid_route', message);
}

/** A copy of `servers` when every one can be routed; else an `invalid_route` error naming the first that cannot. */
export function validateServers(servers: readonly RouteServer[]): RouteServer[] {
  const seen = new Set<string>();
  return servers.map(({ name, address, weight }) => {
    if (typeof name !== 'string' || !SERVER_NAME.test(name)) throw invalid(`server name ${JSON.stringify(name)}: letters, digits, _, . and -, at most 100`);
    if (seen.has(name)) throw invalid(`server ${name} is listed twice`);
    seen.add(name);
    const m = ADDRESS.exec(String(address));
    const ip = m?.[1] ?? m?.[2] ?? '';
    const port = Number(m?.[3]);
    if (isIP(ip) === 0 || !(port >= 1 && port <= 65535)) throw invalid(`server ${name}: address ${JSON.stringify(address)} is not IP:PORT`);
    if (!Number.isInteger(weight) || weight < 0 || weight > MAX_WEIGHT) throw invalid(`server ${name}: weight ${weight} is not an integer 0–${MAX_WEIGHT}`);
    return { name, address, weight };
  });
}
