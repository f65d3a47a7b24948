/**
 * @module The node's connection to NATS, dialled in the background and redialled for as long as
 * the node runs, so a node starts, and keeps serving what it can, while the bus is away. It says
 * when the bus comes up and goes down, and hands each new connection over to be subscribed on.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { inboxPrefix } from '../shared/protocol/cluster';
import type { Logger } from '../shared/log';
import { busAuth } from './bus-auth';

const REDIAL_MS = 500;

export interface BusLinkOptions {
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

/** `onConnection`: a new connection, before the bus counts as up (to subscribe on it). */
export function createBusLink(options: BusLinkOptions, onConnection: (conn: NatsConnection) => void) {
  const { log } = options;
  const { servers, auth, open } = busAuth(options.url, options.credsFile);
  if (open) log.warn('the cluster bus has no credentials: every local user can speak on it as any node (docs/cluster.md, security)');
  let nc: NatsConnection | undefined;
  let connected = false;
  let closed = false;
  let redial: NodeJS.Timeout | undefined;

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
        onConnection(conn);
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

  return {
    start: dial,

    /** The connection, when there is one that is not closed. */
    current: (): NatsConnection | undefined => (nc && !nc.isClosed() ? nc : undefined),

    /** Whether requests and publications can go out now. */
    up: (): boolean => connected && nc !== undefined && !nc.isClosed(),

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
