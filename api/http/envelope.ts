/**
 * @module The success envelope of the session, deployment and identity interfaces (docs/http-api.md,
 * conventions): `{status, data}`, lists with `meta`. Routes name the type of `data` from the
 * resource's module in `shared/api/`, so what they answer is checked against what is documented.
 */
import type { Context } from 'koa';
import type { ListMeta } from '../../shared/api/common';
import type { Paging } from './validate';

export function ok<T>(ctx: Context, data: T, status = 200): void {
  ctx.status = status;
  ctx.body = { status, data };
}

export function okList<T>(ctx: Context, items: T[], paging: Paging, total: number): void {
  const meta: ListMeta = { page: paging.page, per_page: paging.per_page, total };
  ctx.status = 200;
  ctx.body = { status: 200, data: items, meta };
}
