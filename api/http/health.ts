/** @module Liveness, readiness and Prometheus metrics; none of them needs a token. */
import Router from '@koa/router';
import type { Metrics } from '../../shared/metrics';
import type { Store } from '../store/index';

/**
 * `busUp`: whether this peer's bus (NATS) is connected, for a peer (docs/peers.md); none: no bus
 * to wait for. `/readyz` answers 503 while the database or the bus is unreachable.
 */
export function healthRoutes(store: Store, metrics: Metrics, busUp?: () => boolean): Router {
  const router = new Router();

  router.get('/healthz', function healthz(ctx) {
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', async function readyz(ctx) {
    let ready = false;
    try {
      await store.ping();
      ready = true;
    } catch {
      ready = false;
    }
    const bus = busUp?.();
    ctx.status = ready && bus !== false ? 200 : 503;
    ctx.body = {
      status: ctx.status === 200 ? 'ready' : 'not ready',
      database: ready ? 'open' : 'unavailable',
      ...(bus !== undefined && { nats: bus ? 'connected' : 'disconnected' }),
    };
  });

  router.get('/metrics', async function scrapeMetrics(ctx) {
    ctx.type = 'text/plain; version=0.0.4; charset=utf-8';
    ctx.body = await metrics.render();
  });

  return router;
}
