/**
 * @module Where a port forward may lead: `HOST:PORT` targets (a session's `targets`) and the
 * agent's allow-list of `HOST:PORT` patterns (`--forward-allow`, `*` for any port). Hosts are
 * compared in canonical form (lower case, IPv4 as four numbers, IPv6 compressed in brackets, as
 * the WHATWG URL parser writes them), so `LOCALHOST:80` and `localhost:80`, or `[0:0::1]:22` and
 * `[::1]:22`, are the same target; different names of one address are not (`localhost` is not
 * `127.0.0.1`), which is why the default allows each spelling of the loopback. No DNS is involved:
 * the agent resolves a name only when it connects. Used by the API, the agent and the CLI alike.
 */

export interface ForwardTarget {
  /** Canonical: `db.local`, `10.0.0.5`, `[::1]`. */
  host: string;
  port: number;
}

export interface ForwardPattern {
  host: string;
  /** A port, or `*` for any. */
  port: number | '*';
}

/** The agent's allow-list when none is set: the device's own loopback, by each of its names. */
export const DEFAULT_FORWARD_ALLOW = ['127.0.0.1:*', 'localhost:*', '[::1]:*'] as const;

/** Targets a session may name. */
export const MAX_TARGETS = 8;
/** Patterns an allow-list may hold (it travels in a header when the agent connects). */
export const MAX_PATTERNS = 64;

const SHAPE = /^(\[[^\]]*\]|[^:[\]]*):([^:]*)$/;
const RAW_HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[^\s/?#@\\%:[\]]+)$/u;
const CANONICAL_HOST = /^(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$/;

type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** The canonical form of a host name or IP literal, or undefined when it is neither. */
export function canonicalHost(host: string): string | undefined {
  // Only what can be a host on its own: the URL parser would read `a/b` as host `a`.
  if (host.length === 0 || host.length > 253 || !RAW_HOST.test(host)) return undefined;
  let canonical: string;
  try {
    canonical = new URL(`http://${host}/`).hostname;
  } catch {
    return undefined;
  }
  return CANONICAL_HOST.test(canonical) ? canonical : undefined;
}

function parseHostPort(text: string, anyPort: boolean): Parsed<{ host: string; port: number | '*' }> {
  const shape = SHAPE.exec(text);
  if (!shape) return { ok: false, problem: `${JSON.stringify(text)} is not HOST:PORT (an IPv6 address goes in brackets: [::1]:22)` };
  const host = canonicalHost(shape[1]!);
  if (!host) return { ok: false, problem: `${JSON.stringify(shape[1])} is not a host name or IP address` };
  const portText = shape[2]!;
  if (anyPort && portText === '*') return { ok: true, value: { host, port: '*' } };
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    return { ok: false, problem: `${JSON.stringify(portText)} is not a port from 1 to 65535${anyPort ? ' or *' : ''}` };
  }
  return { ok: true, value: { host, port } };
}

/** `HOST:PORT`, canonical, or the problem with it. */
export function parseTarget(text: string): Parsed<ForwardTarget> {
  return parseHostPort(text, false) as Parsed<ForwardTarget>;
}

/** `HOST:PORT` or `HOST:*`, canonical, or the problem with it. */
export function parsePattern(text: string): Parsed<ForwardPattern> {
  return parseHostPort(text, true);
}

export const formatTarget = (t: ForwardTarget | ForwardPattern): string => `${t.host}:${t.port}`;

/**
 * An allow-list from its comma-separated text (spaces around items are ignored); every problem
 * is reported, each naming the item.
 */
export function parseAllowList(text: string): Parsed<ForwardPattern[]> {
  const items = text.split(',').map((s) => s.trim());
  if (items.every((s) => s === '')) return { ok: false, problem: 'is empty (give HOST:PORT patterns, * for any port)' };
  if (items.length > MAX_PATTERNS) return { ok: false, problem: `holds ${items.length} patterns; at most ${MAX_PATTERNS}` };
  const patterns: ForwardPattern[] = [];
  const problems: string[] = [];
  for (const item of items) {
    if (item === '') continue;
    const p = parsePattern(item);
    if (p.ok) patterns.push(p.value);
    else problems.push(p.problem);
  }
  return problems.length > 0 ? { ok: false, problem: problems.join('; ') } : { ok: true, value: patterns };
}

/** Whether `target` matches one of `patterns`. */
export function isAllowed(patterns: readonly ForwardPattern[], target: ForwardTarget): boolean {
  return patterns.some((p) => p.host === target.host && (p.port === '*' || p.port === target.port));
}
