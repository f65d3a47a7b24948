/**
 * @module The ingress of an environment under the `docker` runtime: one HAProxy that tether
 * configures once and then changes only through its runtime API, so no reload ever drops a
 * request. A request whose Host is a service's name, or begins with `NAME.`, goes to that
 * service's servers; an unknown host gets 404, a service without a ready server 503. HAProxy
 * runs as a daemon beside tether: a tether restart adopts it with its routes (pid file and admin
 * socket in the run directory), and `close()` leaves it serving; only `stop()` ends it.
 * Each service holds one of a fixed pool of backend slots (DEFAULT_SLOTS, 128): HAProxy cannot
 * create backends at run time. Changes to one service run one at a time, in call order.
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Logger } from '../../../shared/log';
import type { Environment } from '../../store/services';
import { SERVICE_NAME } from '../spec';
import { ADMIN_DRAIN, command, expect, parseMap, parseServersState } from './ingress/admin-socket';
import { convergeSlot, isServing, retireServer, type RouteServer, type SlotContext } from './ingress/backends';
import { DEFAULT_SLOTS, MAX_SLOTS, formatAddress, parseListen, runFiles, slotIndex, slotName, type RunFiles } from './ingress/config';
import { IngressError } from './ingress/errors';
import { findHaproxy, isOurHaproxy, stopPid } from './ingress/haproxy-process';
import { findRunning, launch, removeRunFiles, type Running } from './ingress/lifecycle';
import { validateServers } from './ingress/validate';

export { DEFAULT_SLOTS, MAX_SLOTS } from './ingress/config';
export { IngressError, type IngressErrorCode } from './ingress/errors';
export { splitWeights } from './ingress/weights';
export type { RouteServer } from './ingress/backends';

export interface IngressOptions {
  environment: Environment;
  /** `host:port`; port 0 picks a free one (and adopts a running HAProxy whatever its port). */
  listen: string;
  /** The ingress's own directory (`<data dir>/ingress/<env>`): configuration, pid file, admin socket. */
  runDir: string;
  log: Logger;
  /** The HAProxy binary; by default /usr/sbin/haproxy or the first on PATH. */
  haproxyPath?: string | undefined;
  /** Backend slots, i.e. the most services the environment can route (a new HAProxy only); default 128. */
  slots?: number | undefined;
  /** How long a removed server may finish its requests before they are cut; default 30 s. */
  drainTimeoutMs?: number | undefined;
}

export interface Ingress {
  readonly environment: Environment;
  /** `http://HOST:PORT` where the ingress listens. */
  readonly endpoint: string;
  /** HAProxy's pid. */
  readonly pid: number;
  /** True when an HAProxy already running for this run directory was adopted. */
  readonly adopted: boolean;
  readonly slots: number;
  /**
   * Converges the service's route to exactly `servers` (by name): adds the missing ones, sets
   * addresses and weights, and drains then deletes the others. Resolves once removed servers
   * have finished their requests and are gone. An empty list keeps the route (503).
   */
  setRoute(service: string, servers: readonly RouteServer[]): Promise<void>;
  /** Unknown host (404) from now on; resolves once its servers have drained and are gone. */
  removeRoute(service: string): Promise<void>;
  /** What HAProxy routes now: each service's serving servers (draining ones left out). */
  routes(): Promise<Map<string, RouteServer[]>>;
  /** Detaches tether: waits end (the next tether resumes them) and HAProxy keeps serving. */
  close(): Promise<void>;
  /** Stops HAProxy and removes its run files (tests, deleting an environment). */
  stop(): Promise<void>;
}

const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** The run directory's files, the directory made; paths that HAProxy's syntax cannot carry are refused. */
function prepareRunDir(runDir: string): RunFiles {
  const files = runFiles(resolve(runDir));
  if (!/^[\w./@+-]+$/.test(files.socket)) throw new IngressError('invalid_options', `ingress run directory ${files.socket} must not hold spaces, quotes or #`);
  // sockaddr_un holds 108 bytes with the terminating NUL.
  if (Buffer.byteLength(files.socket) > 107) throw new IngressError('invalid_options', `ingress admin socket path ${files.socket} is longer than 107 bytes`);
  mkdirSync(resolve(runDir), { recursive: true, mode: 0o700 });
  return files;
}

/** Each service's serving servers, read from HAProxy. */
async function readRoutes(files: RunFiles): Promise<Map<string, RouteServer[]>> {
  const map = parseMap(await command(files.socket, `show map ${files.hosts}`));
  const servers = parseServersState(await command(files.socket, 'show servers state')).filter(isServing);
  return new Map(
    map.map(([service, backend]) => [service, servers.filter((s) => s.backend === backend).map(({ name, address, weight }) => ({ name, address, weight }))]),
  );
}

/**
 * The ingress of `environment`: adopts the HAProxy already running in `runDir` (a tether
 * restart: no second HAProxy, routes kept), else starts one. A running HAProxy on another
 * address than an explicit `listen` is replaced, its routes moved to the new one.
 */
export async function startIngress(options: IngressOptions): Promise<Ingress> {
  const { environment, log } = options;
  const files = prepareRunDir(options.runDir);
  const wanted = parseListen(options.listen);
  const slots = options.slots ?? DEFAULT_SLOTS;
  if (!Number.isInteger(slots) || slots < 1 || slots > MAX_SLOTS) throw new IngressError('invalid_options', `ingress slots must be 1–${MAX_SLOTS}`);
  let running = await findRunning(files, environment, log);
  let moved: Map<string, RouteServer[]> | undefined;
  if (running && (running.address.host !== wanted.host || (wanted.port !== 0 && running.address.port !== wanted.port))) {
    const binary = findHaproxy(options.haproxyPath);
    log.warn('ingress address changed: moving its routes to a new HAProxy', {
      environment,
      from: formatAddress(running.address.host, running.address.port),
      to: options.listen,
    });
    moved = await readRoutes(files);
    await stopPid(running.pid);
    running = await launch(binary, files, environment, wanted, Math.max(slots, moved.size));
  }
  running ??= await launch(findHaproxy(options.haproxyPath), files, environment, wanted, slots);
  const ingress = await open(running, files, options);
  for (const [service, servers] of moved ?? []) await ingress.setRoute(service, servers);
  log.info(running.adopted ? 'ingress adopted' : 'ingress started', { environment, endpoint: ingress.endpoint, pid: running.pid, slots: running.slots });
  return ingress;
}

/** The ingress running in `runDir`, adopted; undefined when none runs there. */
export async function adoptIngress(options: IngressOptions): Promise<Ingress | undefined> {
  const files = prepareRunDir(options.runDir);
  const running = await findRunning(files, options.environment, options.log);
  return running ? open(running, files, options) : undefined;
}

/** The Ingress over a running HAProxy: its routes read back, and work a previous tether left half done resumed. */
async function open(running: Running, files: RunFiles, options: IngressOptions): Promise<Ingress> {
  const { environment, log } = options;
  const abort = new AbortController();
  const ctx: SlotContext = { socket: files.socket, log, drainTimeoutMs: options.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS, signal: abort.signal };
  /** service → its slot; the host map holds the same. */
  const owned = new Map<string, number>();
  /** Slots of removed services whose servers are still leaving. */
  const busy = new Set<number>();
  /** The last piece of work per key (a service, or `#N` for a slot being emptied); never rejects. */
  const chains = new Map<string, Promise<void>>();
  let closed = false;

  function serial<T>(key: string, work: () => Promise<T>): Promise<T> {
    const run = (chains.get(key) ?? Promise.resolve()).then(() => {
      if (closed) throw new IngressError('closed');
      return work();
    });
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    chains.set(key, tail);
    void tail.then(() => chains.get(key) === tail && chains.delete(key));
    return run;
  }

  function background(key: string, what: string, work: () => Promise<void>): void {
    serial(key, work).catch((err: unknown) => {
      if (!(err instanceof IngressError && err.code === 'closed')) log.error(`ingress could not ${what}`, { environment, err });
    });
  }

  function allocate(): number {
    const used = new Set([...owned.values(), ...busy]);
    for (let i = 0; i < running.slots; i++) if (!used.has(i)) return i;
    throw new IngressError('no_free_slot', `all ${running.slots} backend slots of the ${environment} ingress hold a service`);
  }

  function emptySlot(slot: number): void {
    busy.add(slot);
    background(`#${slot}`, `empty ${slotName(slot)}`, async () => {
      await convergeSlot(ctx, slotName(slot), []);
      busy.delete(slot);
    });
  }

  for (const [service, backend] of parseMap(await command(files.socket, `show map ${files.hosts}`))) {
    const slot = slotIndex(backend);
    if (slot !== undefined && slot < running.slots && !owned.has(service)) owned.set(service, slot);
  }
  const servers = parseServersState(await command(files.socket, 'show servers state'));
  const ownerOf = new Map([...owned].map(([service, slot]) => [slotName(slot), service]));
  for (let slot = 0; slot < running.slots; slot++) {
    const here = servers.filter((s) => s.backend === slotName(slot));
    const service = ownerOf.get(slotName(slot));
    if (service === undefined) {
      // A route removed while its servers were leaving: finish emptying the slot.
      if (here.length > 0) emptySlot(slot);
      continue;
    }
    for (const s of here.filter((x) => (x.admin & ADMIN_DRAIN) !== 0)) {
      background(service, `retire ${s.backend}/${s.name}`, () => retireServer(ctx, s.backend, s.name));
    }
  }

  async function close(): Promise<void> {
    closed = true;
    abort.abort();
    await Promise.all(chains.values());
  }

  return {
    environment,
    endpoint: `http://${formatAddress(running.address.host, running.address.port)}`,
    pid: running.pid,
    adopted: running.adopted,
    slots: running.slots,
    async setRoute(service, list) {
      if (closed) throw new IngressError('closed');
      if (!SERVICE_NAME.test(service)) throw new IngressError('invalid_route', `${JSON.stringify(service)} is not a service name`);
      const servers = validateServers(list);
      return serial(service, async () => {
        let slot = owned.get(service);
        if (slot === undefined) {
          slot = allocate();
          owned.set(service, slot);
          try {
            await expect(files.socket, `add map ${files.hosts} ${service} ${slotName(slot)}`);
          } catch (err) {
            owned.delete(service);
            throw err;
          }
        }
        await convergeSlot(ctx, slotName(slot), servers);
        log.info('ingress route set', { environment, service, backend: slotName(slot), servers: servers.map((s) => `${s.name}=${s.address}@${s.weight}`) });
      });
    },
    async removeRoute(service) {
      if (closed) throw new IngressError('closed');
      return serial(service, async () => {
        const slot = owned.get(service);
        if (slot === undefined) return;
        await expect(files.socket, `del map ${files.hosts} ${service}`, /^(|Key not found\.)$/);
        owned.delete(service);
        busy.add(slot);
        await convergeSlot(ctx, slotName(slot), []);
        busy.delete(slot);
        log.info('ingress route removed', { environment, service });
      });
    },
    routes: () => readRoutes(files),
    close,
    async stop() {
      await close();
      if (isOurHaproxy(running.pid, files.config)) await stopPid(running.pid);
      removeRunFiles(files);
      log.info('ingress stopped', { environment, pid: running.pid });
    },
  };
}
