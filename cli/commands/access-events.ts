/**
 * @module The `access_request.*` events of one request on `GET /v1/events` (server-sent events),
 * for `tether access request --wait`: each says only that the request changed, and the waiter
 * then reads the request itself. The stream goes to the configured server with the configured
 * token, on `node:http` as the API client does; a stream that cannot be read (the token may not,
 * too many streams, an old server) resolves undefined and the waiter polls instead.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { credentials } from '../config';
import type { Context } from '../context';

/** An event is small; a stream that never ends one is not a tether server's. */
const MAX_EVENT_CHARS = 1024 * 1024;

/**
 * Listens for the events of request `requestId`; `onChange` is called for each, `onEnd` once the
 * stream ends. Resolves with the function that closes the stream once it is open.
 */
export function listenAccessEvents(ctx: Context, requestId: string, onChange: () => void, onEnd: () => void): Promise<(() => void) | undefined> {
  return new Promise((resolve) => {
    const { server, token } = credentials(ctx.env);
    const url = new URL(`${new URL(server).pathname.replace(/\/+$/, '')}/v1/events`, server);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = send(url, { method: 'GET', headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' } });
    req.on('error', () => resolve(undefined));
    req.on('response', function onEventsResponse(res) {
      if (res.statusCode !== 200) {
        res.resume();
        return resolve(undefined);
      }
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        if (buffer.length > MAX_EVENT_CHARS) return void res.destroy();
        for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!/^event: access_request\.\w+$/m.test(block)) continue;
          try {
            const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? '') as { request_id?: unknown };
            if (data.request_id === requestId) onChange();
          } catch {
            // an event this client cannot read is skipped; the next read of the request catches up
          }
        }
      });
      res.on('error', () => {}); // 'close' follows
      res.on('close', onEnd);
      resolve(() => req.destroy());
    });
    req.end();
  });
}
