/** @module Gives every request an id: the client's `X-Request-ID` when sane, else a new UUID. */
import type { Middleware } from 'koa';
import { newRequestId } from '../../shared/ids';

// A client's id is echoed in headers and logs, so only short, plain tokens are accepted.
const ACCEPTABLE = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestId(): Middleware {
  return async function requestIdMiddleware(ctx, next) {
    const sent = ctx.get('x-request-id');
    const id = ACCEPTABLE.test(sent) ? sent : newRequestId();
    ctx.state.requestId = id;
    ctx.set('X-Request-ID', id);
    await next();
  };
}
