/**
 * @module Binding the server's port before anything else (docs/settings.md, server): a port
 * that is taken or forbidden stops `tether server` before it writes a data dir or a token, with
 * a message saying which setting picks another. Requests that arrive between binding and being
 * ready are held, then served.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export type ListenErrorCode = 'address_in_use' | 'permission_denied' | 'address_unavailable';

/** The port cannot be bound; `code` says why, the message what to do. */
export class ListenError extends Error {
  override name = 'ListenError';
  constructor(
    message: string,
    readonly code: ListenErrorCode,
  ) {
    super(message);
  }
}

const PICK_ANOTHER = 'set TETHER_LISTEN (or listen: in the --config file) to another host:port (port 0 picks a free one)';

/** The operator's explanation of a failed bind, or undefined for errors of another kind. */
export function explainListenError(err: NodeJS.ErrnoException, address: string): ListenError | undefined {
  switch (err.code) {
    case 'EADDRINUSE':
      return new ListenError(`${address} is in use by another process; ${PICK_ANOTHER}`, 'address_in_use');
    case 'EACCES':
      return new ListenError(`${address}: permission denied (ports below 1024 need privileges); ${PICK_ANOTHER}`, 'permission_denied');
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new ListenError(`${address}: no such address on this machine; ${PICK_ANOTHER}`, 'address_unavailable');
    default:
      return undefined;
  }
}

/** Listens on host:port; a bind failure rejects with a ListenError where one explains it. */
export function listen(server: Server, host: string, port: number, address: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => reject(explainListenError(err, address) ?? err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;
type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface HeldRequests {
  /** Serves everything held, and everything from now on, with these handlers. */
  ready(onRequest: RequestHandler, onUpgrade: UpgradeHandler): void;
  /** Start-up failed: drops everything held. */
  fail(): void;
}

/** Holds the requests and upgrades `server` receives until `ready` or `fail`. */
export function holdRequests(server: Server): HeldRequests {
  const held: Array<() => void> = [];
  const sockets = new Set<Duplex>();
  let onRequest: RequestHandler | undefined;
  let onUpgrade: UpgradeHandler | undefined;
  function holdRequest(req: IncomingMessage, res: ServerResponse): void {
    sockets.add(req.socket);
    held.push(() => onRequest!(req, res));
  }
  function holdUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    sockets.add(socket);
    held.push(() => onUpgrade!(req, socket, head));
  }
  server.on('request', holdRequest);
  server.on('upgrade', holdUpgrade);
  function release(): void {
    server.off('request', holdRequest);
    server.off('upgrade', holdUpgrade);
    sockets.clear();
  }
  return {
    ready(request, upgrade) {
      onRequest = request;
      onUpgrade = upgrade;
      release();
      server.on('request', request);
      server.on('upgrade', upgrade);
      for (const serve of held.splice(0)) serve();
    },
    fail() {
      for (const socket of sockets) socket.destroy();
      held.length = 0;
      release();
    },
  };
}
