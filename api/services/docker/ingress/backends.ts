/**
 * @module The servers of one backend slot, changed through the runtime API without a reload:
 * new servers are added in maintenance (HAProxy's rule for `add server`) and then set ready;
 * weights and addresses change in place; a server leaves by drain (no new requests), wait for
 * its sessions to end, maintenance, then `del server`, which HAProxy refuses while a connection
 * is still attached, so it is retried until it passes.
 */
import type { Logger } from '../../../../shared/log';
import { ADMIN_DRAIN, ADMIN_MAINT, command, expect, parseServersState, parseSessions, type ServerState } from './admin-socket';
import { IngressError } from './errors';

/** A server of a route: a replica's HTTP address and its share of the round robin. */
export interface RouteServer {
  /** Unique within the service: letters, digits, `_`, `.`, `-` (HAProxy's server names). */
  name: string;
  /** `IP:PORT` (IPv6 in brackets). */
  address: string;
  /** 0–256; 0 takes no new requests. */
  weight: number;
}

export interface SlotContext {
  socket: string;
  log: Logger;
  /** How long a leaving server may keep its requests before they are cut. */
  drainTimeoutMs: number;
  /** Aborted when the ingress closes: waits end, leaving the rest to the next tether. */
  signal: AbortSignal;
}

/** After the drain, how long `del server` is retried while HAProxy still holds a connection. */
const DELETE_TIMEOUT_MS = 5000;
const POLL_MS = 50;

/** The servers of a backend as HAProxy has them now. */
export async function listServers(socket: string, backend: string): Promise<ServerState[]> {
  return parseServersState(await command(socket, `show servers state ${backend}`));
}

/** True when the server takes traffic at its weight (neither draining nor in maintenance). */
export function isServing(server: ServerState): boolean {
  return (server.admin & (ADMIN_DRAIN | ADMIN_MAINT)) === 0;
}

/** Polls `done` until it holds; false when `timeoutMs` passed first. */
async function pollUntil(done: () => Promise<boolean>, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (signal.aborted) throw new IngressError('closed');
    if (await done()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** Makes `server` exist in `backend` with its address and weight, ready for requests. */
export async function upsertServer(ctx: SlotContext, backend: string, server: RouteServer, current: ServerState | undefined): Promise<void> {
  const id = `${backend}/${server.name}`;
  if (!current) {
    await expect(ctx.socket, `add server ${id} ${server.address} weight ${server.weight}`, /^New server registered\.$/);
  } else {
    if (current.address !== server.address) {
      const at = server.address.lastIndexOf(':');
      const ip = server.address.slice(0, at).replace(/^\[|\]$/g, '');
      await expect(ctx.socket, `set server ${id} addr ${ip} port ${server.address.slice(at + 1)}`, /changed|no need/i);
    }
    if (current.weight !== server.weight) await expect(ctx.socket, `set server ${id} weight ${server.weight}`);
  }
  if (!current || !isServing(current)) await expect(ctx.socket, `set server ${id} state ready`);
}

/** Current sessions of one server; 0 once it is gone. */
async function sessionsOf(socket: string, backend: string, name: string): Promise<number> {
  return parseSessions(await command(socket, `show stat ${backend} 4 -1`)).get(name) ?? 0;
}

/**
 * Takes a server out: no new requests from now on, the ones it has run to their end (up to the
 * drain timeout, after which they are cut), then it is deleted.
 */
export async function retireServer(ctx: SlotContext, backend: string, name: string): Promise<void> {
  const id = `${backend}/${name}`;
  const gone = (answer: string) => /No such (server|backend)/i.test(answer);
  const answer = (await command(ctx.socket, `set server ${id} state drain`)).trim();
  if (gone(answer)) return;
  if (answer !== '') throw new IngressError('runtime_api', `HAProxy refused to drain ${id}: ${answer}`);
  const drained = await pollUntil(async () => (await sessionsOf(ctx.socket, backend, name)) === 0, ctx.drainTimeoutMs, ctx.signal);
  if (!drained) {
    ctx.log.warn('ingress server did not drain in time: cutting its requests', { backend, server: name, drain_timeout_ms: ctx.drainTimeoutMs });
    await command(ctx.socket, `shutdown sessions server ${id}`);
  }
  await expect(ctx.socket, `set server ${id} state maint`, /^(|No such server\.)$/);
  let last = '';
  const deleted = await pollUntil(
    async () => {
      last = (await command(ctx.socket, `del server ${id}`)).trim();
      return last === 'Server deleted.' || gone(last);
    },
    DELETE_TIMEOUT_MS,
    ctx.signal,
  );
  if (!deleted) throw new IngressError('runtime_api', `HAProxy did not delete ${id}: ${last}`);
  ctx.log.debug('ingress server removed', { backend, server: name });
}

/**
 * Converges a backend to exactly `servers`: adds and updates first, so traffic always has
 * somewhere to go, then retires the others (resolves once they are deleted).
 */
export async function convergeSlot(ctx: SlotContext, backend: string, servers: readonly RouteServer[]): Promise<void> {
  const current = new Map((await listServers(ctx.socket, backend)).map((s) => [s.name, s]));
  for (const server of servers) await upsertServer(ctx, backend, server, current.get(server.name));
  const wanted = new Set(servers.map((s) => s.name));
  await Promise.all([...current.keys()].filter((name) => !wanted.has(name)).map((name) => retireServer(ctx, backend, name)));
}
