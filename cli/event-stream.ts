/**
 * @module The `GET /v1/events` stream (server-sent events) a command follows while it waits on
 * something (a job, an access request), as `./raw-request` sends it; one that cannot be read (the token may
 * not, too many streams, an old server) is given up for good, and the command reads the thing
 * itself more often instead. One that ends is opened again when the command next asks.
 */
import type { Context } from './context';
import { requestTo } from './raw-request';

/** An event is small; a stream that never ends one is not a tether server's. */
const MAX_EVENT_CHARS = 1024 * 1024;

/**
 * Listens to the events stream: `onEvent` gets each event's name and parsed data (events whose
 * data is not JSON are skipped: the command's next read catches up), `onEnd` is called once the
 * stream ends. Resolves with the function that closes the stream once it is open, or undefined
 * when it cannot be read.
 */
function listenEvents(ctx: Context, onEvent: (name: string, data: unknown) => void, onEnd: () => void): Promise<(() => void) | undefined> {
  return new Promise((resolve) => {
    const req = requestTo(ctx, 'GET', '/v1/events', { accept: 'text/event-stream' });
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
          const name = /^event: (.+)$/m.exec(block)?.[1];
          if (name === undefined) continue;
          let data: unknown;
          try {
            data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? '');
          } catch {
            continue;
          }
          onEvent(name, data);
        }
      });
      res.on('error', () => {}); // 'close' follows
      res.on('close', onEnd);
      resolve(() => req.destroy());
    });
    req.end();
  });
}

/**
 * The events stream as a command waiting on something holds it: `ensure()` opens it unless it is
 * open, being opened, or was refused; `onOpen` runs each time it is open (what changed before it
 * opened is read then).
 */
export function followEvents(ctx: Context, onEvent: (name: string, data: unknown) => void, onOpen: () => void) {
  let state: 'closed' | 'opening' | 'open' | 'refused' = 'closed';
  let close: (() => void) | undefined;
  let stopped = false;
  return {
    get open() {
      return state === 'open';
    },
    ensure() {
      if (state !== 'closed' || stopped) return;
      state = 'opening';
      listenEvents(ctx, onEvent, () => void (state = 'closed')).then(
        (closer) => {
          if (!closer) return void (state = 'refused');
          if (stopped) return closer();
          state = 'open';
          close = closer;
          onOpen();
        },
        () => void (state = 'refused'),
      );
    },
    stop() {
      stopped = true;
      close?.();
    },
  };
}
