/**
 * @module The forwards of `tether forward`, written as `ssh -L` writes them:
 * `[BIND_ADDR:]LOCAL_PORT:REMOTE_HOST:REMOTE_PORT`, IPv6 addresses in brackets
 * (`[::1]:8080:[::1]:80`). The bind address defaults to 127.0.0.1; local port 0 picks a free one.
 */
import { isIP } from 'node:net';
import { canonicalHost, formatTarget, parseTarget } from '../shared/protocol/port-forward/targets';
import { usageError } from './errors';

export interface ForwardSpec {
  /** Where to listen: an IP address or a name (`localhost`), without brackets. */
  bindHost: string;
  /** 0: any free port. */
  localPort: number;
  /** The session target, canonical `HOST:PORT`. */
  target: string;
  /** As the user wrote it, for messages. */
  text: string;
}

/** Splits on the colons outside brackets. */
function fields(text: string): string[] {
  const out: string[] = [];
  let field = '';
  let depth = 0;
  for (const ch of text) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (ch === ':' && depth === 0) {
      out.push(field);
      field = '';
    } else field += ch;
  }
  out.push(field);
  return out;
}

function portOf(text: string, spec: string, allowZero: boolean): number {
  const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(port >= (allowZero ? 0 : 1) && port <= 65535)) {
    throw usageError(`${spec}: ${JSON.stringify(text)} is not a port (${allowZero ? 0 : 1} to 65535)`);
  }
  return port;
}

/** One forward from its text; a usage error says what is wrong with it. */
export function parseForwardSpec(text: string): ForwardSpec {
  const parts = fields(text);
  if (parts.length !== 3 && parts.length !== 4) {
    throw usageError(`${text}: a forward is [BIND_ADDR:]LOCAL_PORT:REMOTE_HOST:REMOTE_PORT, e.g. 15432:127.0.0.1:5432 (IPv6 addresses go in brackets: [::1])`);
  }
  const [bind, local, host, port] = parts.length === 4 ? parts : ['127.0.0.1', ...parts];
  const bindHost = bind!.replace(/^\[(.*)\]$/, '$1');
  if (!isIP(bindHost) && !canonicalHost(bindHost)) throw usageError(`${text}: ${JSON.stringify(bind)} is not an address to listen on`);
  const localPort = portOf(local!, text, true);
  portOf(port!, text, false);
  const target = parseTarget(`${host}:${port}`);
  if (!target.ok) throw usageError(`${text}: ${target.problem}`);
  return { bindHost, localPort, target: formatTarget(target.value), text };
}
