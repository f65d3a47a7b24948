/**
 * @module A request to the configured server that the API client's JSON calls do not make (a
 * streamed upload, the events stream): with the configured token, on `node:http` or `node:https`
 * as the API client does, not yet sent.
 */
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { credentials } from './config';
import type { Context } from './context';

export function requestTo(ctx: Context, method: string, path: string, headers: Record<string, string | number>): ClientRequest {
  const { server, token } = credentials(ctx.env);
  const url = new URL(`${new URL(server).pathname.replace(/\/+$/, '')}${path}`, server);
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return send(url, { method, headers: { authorization: `Bearer ${token}`, ...headers } });
}
