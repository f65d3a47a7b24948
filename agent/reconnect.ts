/**
 * @module When the agent dials the relay again (docs/settings.md, agent). Failures that pass
 * (server down, 5xx, a dropped connection) follow the backoff: 1 s up to 30 s, full jitter. A
 * token the server refuses (401) does not pass: after `refusalsBeforeLong` refusals in a row the
 * agent retries only every `longMs` (±20 % jitter, so a fleet whose tokens were revoked together
 * does not come back in step), until a connection is accepted. Each try reports whether the mode
 * changed, so the agent logs once per change instead of once per try (chisel's
 * client_connect.go gives up on an auth failure; a device agent must keep trying, slowly).
 */
import { hostname } from 'node:os';
import type { Backoff } from './backoff';
import type { Logger } from '../shared/log';

/** The default wait between tries while the server refuses this agent's token. */
export const REFUSED_RETRY_MS = 5 * 60_000;
/** How many 401s in a row make the agent wait the long interval. */
export const REFUSALS_BEFORE_LONG = 3;

export type ReconnectMode = 'backoff' | 'token_refused';

export interface ReconnectOptions {
  backoff: Backoff;
  longMs?: number;
  refusalsBeforeLong?: number;
  /** Uniform random in [0, 1); injectable for tests. */
  random?: () => number;
}

export interface NextTry {
  delayMs: number;
  mode: ReconnectMode;
  /** True when this failure switched the mode (log it then, and only then). */
  changed: boolean;
  /** 401s in a row so far. */
  refusals: number;
}

export function createReconnectPolicy(options: ReconnectOptions) {
  const longMs = options.longMs ?? REFUSED_RETRY_MS;
  const threshold = options.refusalsBeforeLong ?? REFUSALS_BEFORE_LONG;
  const random = options.random ?? Math.random;
  let refusals = 0;
  let mode: ReconnectMode = 'backoff';

  return {
    longMs,

    /** A try failed or a connection ended; `status` is the HTTP status of a refused upgrade. */
    failed(status?: number): NextTry {
      if (status === 401) refusals++;
      else if (mode === 'backoff') refusals = 0; // only refusals in a row count
      const before = mode;
      if (refusals >= threshold) mode = 'token_refused';
      const delayMs = mode === 'token_refused' ? Math.round(longMs * (0.8 + 0.4 * random())) : options.backoff.next();
      return { delayMs, mode, changed: mode !== before, refusals };
    },

    /** The server accepted the connection: back to the backoff. True when that ends the long waits. */
    connected(): boolean {
      const wasRefused = mode === 'token_refused';
      refusals = 0;
      mode = 'backoff';
      return wasRefused;
    },

    get mode(): ReconnectMode {
      return mode;
    },
  };
}
export type ReconnectPolicy = ReturnType<typeof createReconnectPolicy>;

/** "5 min", "90 s", "0.2 s": how a wait reads in a log line. */
export function formatWait(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** How a try ended: the connection closed, the server refused the upgrade, or the dial failed. */
export interface TryEnd {
  closed?: { code: number; reason: string; err?: string | undefined };
  refusal?: { status: number; message: string };
  failure?: string;
}

/** Logs how the connection or the try ended (one line), and once when the server starts refusing the token. */
export function logTryEnd(log: Logger, end: TryEnd, next: NextTry, deviceId: string, longMs: number): void {
  const { closed, refusal, failure } = end;
  const delay_ms = next.delayMs;
  if (next.changed) log.error(tokenRefusedMessage(deviceId, formatWait(longMs)), { status: 401, refusals: next.refusals });
  // One line per try; while the token is refused, only at debug (the line above said it all).
  const quiet = next.mode === 'token_refused' || refusal?.status === 401;
  if (closed) log.info('disconnected from broker; reconnecting', { ...closed, delay_ms });
  else if (refusal) log[quiet ? 'debug' : 'error']('broker refused the agent', { ...refusal, delay_ms, host: hostname() });
  else log[quiet ? 'debug' : 'warn']('connection to broker failed; reconnecting', { err: failure, delay_ms });
}

/** The message of a refusal's JSON body (`{"message": …}`), or its text as it came. */
export function refusalMessage(body: string): string {
  try {
    return (JSON.parse(body) as { message?: string }).message ?? body;
  } catch {
    return body; // not JSON: log the text as it came
  }
}

/** What an operator reads once when the server keeps refusing the token (401), and what to do. */
function tokenRefusedMessage(deviceId: string, every: string): string {
  return (
    `the server refuses this agent's token (401): the device is not registered or the token is not its own; ` +
    `register it (\`tether device add ${deviceId}\` prints a new token), set the token in TETHER_DEVICE_TOKEN ` +
    `and restart the agent; retrying every ${every}`
  );
}
