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

/** What `logTryEnd` says the refusals mean. */
export interface RefusalContext {
  deviceId: string;
  longMs: number;
  /** The server said this device's token was replaced (close 4411) since the agent last connected. */
  tokenReplaced: boolean;
}

/** Logs how the connection or the try ended (one line), and once when the server starts refusing the token. */
export function logTryEnd(log: Logger, end: TryEnd, next: NextTry, why: RefusalContext): void {
  const { closed, refusal, failure } = end;
  const delay_ms = next.delayMs;
  if (next.changed) log.error(tokenRefusedMessage(why), { status: 401, refusals: next.refusals });
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

/** Where the agent's token goes: the environment, or the packaged agent's settings file. */
const TOKEN_PLACE = 'TETHER_DEVICE_TOKEN (/etc/tether/agent.env for the packaged agent)';

/** What an operator reads when the server closes the connection because the device's token was replaced. */
export function tokenReplacedMessage(deviceId: string): string {
  return (
    `the server replaced this device's agent token: the new one is what \`tether device rotate-token ${deviceId}\` printed ` +
    `(run it again for another); put it in ${TOKEN_PLACE} and restart the agent`
  );
}

/**
 * What an operator reads once when the server keeps refusing the token (401), and what to do.
 * The server answers every wrong token alike (saying which devices exist would help a guesser),
 * so unless it closed the connection saying the token was replaced, both causes are named.
 */
function tokenRefusedMessage({ deviceId, longMs, tokenReplaced }: RefusalContext): string {
  const why = tokenReplaced
    ? `the device's token was replaced: the new one is what \`tether device rotate-token ${deviceId}\` printed (run it again for another)`
    : `the device's token was replaced (\`tether device rotate-token ${deviceId}\` prints a new one) or the device is not ` +
      `registered (\`tether device add ${deviceId}\` registers it and prints its token)`;
  return `the server refuses this agent's token (401): ${why}; put the token in ${TOKEN_PLACE} and restart the agent; retrying every ${formatWait(longMs)}`;
}
