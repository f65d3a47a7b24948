/**
 * @module The node's connection to NATS (docs/cluster.md): dialled in the background and redialled
 * for as long as the node runs, so a node starts, and keeps serving what it can, while the bus is
 * away. JSON in and out, every message received checked against its schema (a malformed one is
 * logged and dropped), requests with a deadline, and `up()` saying whether the bus can be used now.
 */
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, headers as natsHeaders, type ConnectionOptions, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type * as z from 'zod/mini';
import { controlWildcard, inboxPrefix, nodeOfSubject, type ControlVerb } from '../shared/cluster';
import type { Logger } from '../shared/log';

/** The bus cannot be used now: not connected, or nobody answered in time. */
export class BusUnavailable extends Error {
  override name = 'BusUnavailable';
}

export interface BusOptions {
  /** `nats://[user:password@]host:port` or `tls://…`, or several comma-separated. */
  url: string;
  /** The node's credentials file (a user JWT and its NKEY seed), when the bus asks for them. */
  credsFile?: string | undefined;
  /** The node's name: its requests' replies come to `_INBOX.<name>.…`, which only it may read. */
  nodeName: string;
  /** Names the connection in the NATS server's monitoring (`tether-<node id>`). */
  name: string;
  log: Logger;
  /** Called when the bus comes up (first time and after every outage) and goes down. */
  onUp?: () => void;
  onDown?: () => void;
}

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

const REDIAL_MS = 500;
const REQUEST_TIMEOUT_MS = 2_000;

export interface Incoming<T> {
  body: T;
  /** The node that sent it, from its subject (`tether.control.<node>.<verb>`); empty elsewhere. */
  node: string;
  headers: MsgHdrs | undefined;
  /** Answers a request (does nothing for a published message). */
  reply(body: unknown): void;
}

export function createBus(options: BusOptions) {
  const { log } = options;
  const { servers, auth, open } = busAuth(options.url, options.credsFile);
  if (open) log.warn('the cluster bus has no credentials: every local user can speak on it as any node (docs/cluster.md, security)');
  let nc: NatsConnection | undefined;
  let connected = false;
  let closed = false;
  let redial: NodeJS.Timeout | undefined;
  const handlers: Array<{ subject: string; queue?: string; onMessage: (msg: Msg) => void }> = [];
  let subscriptions: Subscription[] = [];

  function setUp(up: boolean): void {
    if (up === connected) return;
    connected = up;
    if (up) {
      log.info('connected to NATS', { server: nc?.getServer() });
      options.onUp?.();
    } else {
      log.warn('lost NATS; reconnecting');
      options.onDown?.();
    }
  }

  async function watch(conn: NatsConnection): Promise<void> {
    for await (const s of conn.status()) {
      if (s.type === 'disconnect' || s.type === 'staleConnection') setUp(false);
      else if (s.type === 'reconnect') setUp(true);
      else if (s.type === 'error') log.warn('NATS error', { err: s.error.message });
    }
  }

  function dial(): void {
    redial = undefined;
    connect({
      servers,
      ...auth,
      inboxPrefix: inboxPrefix(options.nodeName),
      name: options.name,
      reconnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: REDIAL_MS,
      reconnectJitter: 100,
      timeout: 2_000,
      pingInterval: 5_000,
      maxPingOut: 2,
      // A node acts on what it broadcasts itself at once; its own copy coming back would do it twice.
      noEcho: true,
    }).then(
      (conn) => {
        if (closed) return void conn.close();
        nc = conn;
        subscriptions = handlers.map((h) => conn.subscribe(h.subject, { queue: h.queue, callback: (_err, msg) => h.onMessage(msg) }));
        void watch(conn).catch(() => {});
        void conn.closed().then(() => {
          if (nc !== conn || closed) return;
          // The client gave up for good (it should not, with unlimited attempts): start over.
          nc = undefined;
          setUp(false);
          redial = setTimeout(dial, REDIAL_MS);
        });
        setUp(true);
      },
      (err: Error) => {
        if (closed) return;
        log.debug('NATS not reachable yet', { err: err.message });
        redial = setTimeout(dial, REDIAL_MS);
      },
    );
  }

  function encode(body: unknown): Uint8Array {
    return Buffer.from(JSON.stringify(body));
  }

  function decode<T>(schema: z.ZodMiniType<T>, data: Uint8Array): T | undefined {
    try {
      const parsed = schema.safeParse(JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8')));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  return {
    start(): void {
      dial();
    },

    /** Whether requests and publications can go out now. */
    up: (): boolean => connected && nc !== undefined && !nc.isClosed(),

    /**
     * Handles a subject's messages (requests or publications) with `handle`; with `queue`, one
     * node of the queue group gets each. Malformed messages are logged and dropped; errors thrown
     * by `handle` are logged and answered with nothing (the requester times out).
     */
    on<T>(subject: string, schema: z.ZodMiniType<T>, handle: (msg: Incoming<T>) => void, queue?: string): void {
      const onMessage = (msg: Msg) => {
        const body = decode(schema, msg.data);
        if (body === undefined) {
          log.warn('dropped a malformed cluster message', { subject: msg.subject });
          return;
        }
        try {
          handle({ body, node: nodeOfSubject(msg.subject), headers: msg.headers, reply: (answer) => void (msg.reply && msg.respond(encode(answer))) });
        } catch (err) {
          log.error('a cluster message could not be handled', { subject: msg.subject, err: (err as Error).message });
        }
      };
      handlers.push({ subject, queue, onMessage });
      if (nc && !nc.isClosed()) subscriptions.push(nc.subscribe(subject, { queue, callback: (_err, msg) => onMessage(msg) }));
    },

    /** Handles `verb` from every node (the control node): `node` in what `handle` gets is the sender. */
    onNode<T>(verb: ControlVerb, schema: z.ZodMiniType<T>, handle: (msg: Incoming<T>) => void): void {
      this.on(controlWildcard(verb), schema, handle);
    },

    /** Handles raw messages of `verb` from every node (bytes and headers, no JSON). */
    onRawNode(verb: ControlVerb, handle: (node: string, data: Uint8Array, headers: MsgHdrs | undefined) => void): void {
      const subject = controlWildcard(verb);
      const onMessage = (msg: Msg) => {
        try {
          handle(nodeOfSubject(msg.subject), msg.data, msg.headers);
        } catch (err) {
          log.error('a cluster message could not be handled', { subject: msg.subject, err: (err as Error).message });
        }
      };
      handlers.push({ subject, onMessage });
      if (nc && !nc.isClosed()) subscriptions.push(nc.subscribe(subject, { callback: (_err, msg) => onMessage(msg) }));
    },

    /** Publishes `body`; false when the bus is down (nothing is queued for later). */
    publish(subject: string, body: unknown): boolean {
      if (!this.up()) return false;
      nc!.publish(subject, encode(body));
      return true;
    },

    /** Publishes bytes with headers; false when the bus is down. */
    publishRaw(subject: string, data: Uint8Array, hdrs: Record<string, string>): boolean {
      if (!this.up()) return false;
      const h = natsHeaders();
      for (const [k, v] of Object.entries(hdrs)) h.set(k, v);
      nc!.publish(subject, data, { headers: h });
      return true;
    },

    /** Sends a request and checks the reply; BusUnavailable when the bus is down or nobody answers in time. */
    async request<T>(subject: string, body: unknown, schema: z.ZodMiniType<T>, timeoutMs = REQUEST_TIMEOUT_MS): Promise<T> {
      if (!this.up()) throw new BusUnavailable('the cluster bus (NATS) is not connected');
      let msg: Msg;
      try {
        msg = await nc!.request(subject, encode(body), { timeout: timeoutMs });
      } catch (err) {
        throw new BusUnavailable(`no answer on ${subject}: ${(err as Error).message}`);
      }
      const reply = decode(schema, msg.data);
      if (reply === undefined) throw new BusUnavailable(`a malformed answer on ${subject}`);
      return reply;
    },

    /** Sends what is queued and closes the connection; stops redialling. */
    async close(): Promise<void> {
      closed = true;
      clearTimeout(redial);
      const conn = nc;
      nc = undefined;
      connected = false;
      if (conn && !conn.isClosed()) {
        // A drain waits for the server; a bus that is away gets a second, then the door.
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, 1_000)));
        await Promise.race([conn.drain().catch(() => {}), late]);
        clearTimeout(timer);
        if (!conn.isClosed()) await conn.close().catch(() => {});
      }
    },
  };
}
export type Bus = ReturnType<typeof createBus>;
