/**
 * @module The webhook sender (docs/access.md, webhooks): one loop per server that leases due
 * deliveries from the outbox (api/store/webhook-outbox.ts), POSTs each signed with its webhook's
 * secret, at most a few at once, and records the outcome: a 2xx delivers it; anything else tries it
 * again after a growing, jittered pause (1 s, 2 s, 4 s … at most 10 min) for up to 24 hours from
 * its event, then it ends `failed`. Nothing it keeps in memory is needed after a restart: a lease
 * whose sender died runs out and another sender (a peer, or this one started again) claims it.
 * It polls every second, and looks at once when this process enqueues.
 */
import { createHmac } from 'node:crypto';
import { WEBHOOK_HEADERS, WEBHOOK_LIMITS } from '../../shared/api/webhooks';
import type { Logger } from '../../shared/log';
import type { Metrics } from '../../shared/metrics';
import { TETHER_VERSION } from '../../shared/version';
import type { Store } from '../store/index';
import { onDeliveriesEnqueued } from '../store/webhook-outbox';
import { createWebhookRepo, type AttemptOutcome, type ClaimedDelivery } from '../store/webhooks';
import { postOnce } from './post';

/** The pause before attempt `n + 1` after attempt `n` failed (ms): doubling from 1 s, at most 10 min, ±20 %. */
export function backoffMs(n: number): number {
  const base = Math.min(1000 * 2 ** Math.min(n - 1, 20), 600_000);
  return Math.round(base * (0.8 + 0.4 * Math.random()));
}

/** How often the loop looks for due deliveries when nothing woke it (ms). */
const POLL_MS = 1000;
/** After an enqueue here, how often it looks until the enqueuing transaction has committed (ms), and for how long. */
const EAGER_MS = 25;
const EAGER_FOR_MS = 1000;
/** A lease outlasts an attempt's timeout, so a live sender never loses one mid-attempt. */
const LEASE_MS = 3 * WEBHOOK_LIMITS.attemptTimeoutMs;

export interface SenderDeps {
  store: Store;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  /** Attempts in flight at once; default 4. */
  concurrency?: number;
  /** Default `backoffMs`. */
  backoff?: (failedAttempts: number) => number;
}

/** The signature header's value: `sha256=` and the hex HMAC-SHA256 of the raw body with the secret. */
export const signatureOf = (secret: string, body: string): string => `sha256=${createHmac('sha256', secret).update(body, 'utf8').digest('hex')}`;

export function createWebhookSender(deps: SenderDeps) {
  const { log, now } = deps;
  const repo = createWebhookRepo(deps.store.db);
  const concurrency = deps.concurrency ?? 4;
  const backoff = deps.backoff ?? backoffMs;
  const outcomes = deps.metrics.counter(
    'tether_webhook_deliveries_total',
    'Webhook delivery attempts by outcome: delivered, retried (another attempt follows), failed (given up after 24 hours).',
  );
  deps.metrics.gauge('tether_webhook_deliveries_pending', 'Webhook deliveries waiting for their first or next attempt.', () => repo.pendingCount());
  const inFlight = new Map<string, Promise<void>>();
  const stopping = new AbortController();
  const iso = (ms: number) => new Date(ms).toISOString();
  let timer: NodeJS.Timeout | undefined;
  let looking = false;
  let lookAgain = false;
  let eagerUntil = 0;
  let closed = false;
  let unsubscribe: (() => void) | undefined;

  function schedule(ms: number): void {
    if (closed) return;
    clearTimeout(timer);
    timer = setTimeout(look, ms);
    timer.unref();
  }

  function wake(): void {
    eagerUntil = now() + EAGER_FOR_MS;
    schedule(0);
  }

  /** What an attempt that answered `status`/`error` leads to. */
  function outcomeOf(d: ClaimedDelivery, status: number | null, error: string | null): AttemptOutcome {
    const at = now();
    if (error === null) return { kind: 'delivered', status_code: status!, at: iso(at) };
    const next = at + backoff(d.attempts + 1);
    if (next > Date.parse(d.created_at) + WEBHOOK_LIMITS.retryForSeconds * 1000) return { kind: 'failed', status_code: status, error };
    return { kind: 'retry', status_code: status, error, next_attempt_at: iso(next) };
  }

  async function attempt(d: ClaimedDelivery): Promise<void> {
    const headers = {
      'content-type': 'application/json',
      'user-agent': `tether-webhooks/${TETHER_VERSION}`,
      [WEBHOOK_HEADERS.event]: d.event,
      [WEBHOOK_HEADERS.delivery]: d.delivery_id,
      [WEBHOOK_HEADERS.signature]: signatureOf(d.secret, d.body),
    };
    const answer = await postOnce(d.url, d.body, headers, WEBHOOK_LIMITS.attemptTimeoutMs, stopping.signal);
    // Cut short by shutdown: not an attempt; the delivery waits for the next sender.
    const outcome: AttemptOutcome = stopping.signal.aborted && answer.status === null ? { kind: 'released' } : outcomeOf(d, answer.status, answer.error);
    try {
      if (!(await repo.recordAttempt(d.delivery_id, d.lease, outcome))) return;
    } catch (err) {
      // The lease runs out and the delivery is tried again: at least once, never lost.
      log.warn('webhook delivery outcome not recorded', { delivery_id: d.delivery_id, err: (err as Error).message });
      return;
    }
    if (outcome.kind === 'released') return;
    const label = outcome.kind === 'retry' ? 'retried' : outcome.kind;
    outcomes.inc({ outcome: label });
    // The URL is not logged: a Slack-style URL is itself a secret.
    if (outcome.kind === 'failed') log.warn('webhook delivery failed for good', { delivery_id: d.delivery_id, event: d.event, error: outcome.error });
    else if (outcome.kind === 'retry')
      log.info('webhook delivery will be retried', { delivery_id: d.delivery_id, error: outcome.error, next_attempt_at: outcome.next_attempt_at });
  }

  async function look(): Promise<void> {
    timer = undefined;
    if (looking) {
      lookAgain = true;
      return;
    }
    looking = true;
    let full = false;
    try {
      const room = concurrency - inFlight.size;
      if (room > 0) {
        const claimed = await repo.claimDue(iso(now()), iso(now() + LEASE_MS), room);
        full = claimed.length === room;
        for (const d of claimed) {
          const running = attempt(d)
            .catch((err: Error) => log.error('webhook delivery attempt failed unexpectedly', { delivery_id: d.delivery_id, err: err.message }))
            .finally(() => {
              inFlight.delete(d.delivery_id);
              // A freed slot: there may be more due.
              if (full) schedule(0);
            });
          inFlight.set(d.delivery_id, running);
        }
      }
    } catch (err) {
      if (!closed) log.warn('webhook deliveries could not be claimed', { err: (err as Error).message });
    } finally {
      looking = false;
    }
    if (lookAgain || (full && inFlight.size < concurrency)) {
      lookAgain = false;
      schedule(0);
    } else if (timer === undefined) schedule(now() < eagerUntil ? EAGER_MS : POLL_MS);
  }

  return {
    /** Looks for due deliveries now (a delivery enqueued elsewhere, a test). */
    wake,
    /** Starts the loop: what a previous run left pending goes out first. */
    start(): void {
      unsubscribe = onDeliveriesEnqueued(wake);
      schedule(0);
    },
    /** Stops the loop, aborts the attempts in flight (their deliveries wait, unleased, for the next sender) and waits for them. */
    async close(): Promise<void> {
      closed = true;
      unsubscribe?.();
      clearTimeout(timer);
      timer = undefined;
      stopping.abort();
      await Promise.allSettled([...inFlight.values()]);
    },
  };
}
export type WebhookSender = ReturnType<typeof createWebhookSender>;
