/** @module Liveness, readiness and Prometheus metrics; none of them needs a token. */
import Router from '@koa/router';
import type { Metrics } from '../../shared/metrics';
import type { Store } from '../store/index';

export function healthRoutes(store: Store, metrics: Metrics): Router {
  const router = new Router();

  router.get('/healthz', function healthz(ctx) {
    ctx.body = { status: 'ok' };
  });

  router.get('/readyz', function readyz(ctx) {
    let ready = false;
    try {
      ready = store.db.open && store.db.prepare('SELECT 1 AS one').get() !== undefined;
    } catch {
      ready = false;
    }
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not ready', database: ready ? 'open' : 'unavailable' };
  });

  router.get('/metrics', function scrapeMetrics(ctx) {
    ctx.type = 'text/plain; version=0.0.4; charset=utf-8';
    ctx.body = metrics.render();
  });

  return router;
}
