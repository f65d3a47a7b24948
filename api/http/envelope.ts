/** @module The success envelope of the session, deployment and identity interfaces (docs/http-api.md, conventions). */
import type { Context } from 'koa';
import type { Paging } from './validate';

export function ok(ctx: Context, data: unknown, status = 200): void {
  ctx.status = status;
  ctx.body = { status, data };
}

export function okList(ctx: Context, items: unknown[], paging: Paging, total: number): void {
  ctx.status = 200;
  ctx.body = { status: 200, data: items, meta: { page: paging.page, per_page: paging.per_page, total } };
}
