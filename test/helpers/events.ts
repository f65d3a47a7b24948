/** A listener of `GET /v1/events` (server-sent events) for the tests: collects what arrives. */
import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';

export interface EventsListener {
  status: number;
  headers: IncomingHttpHeaders;
  /** Everything received so far. */
  text(): string;
  events: Array<{ event: string; data: Record<string, unknown> }>;
  ended: Promise<void>;
  close(): void;
}

/** Listens to the events stream of the server at `baseUrl` with `headers` (or at `query`); `onEvent` hears each as it arrives. */
export function listenEvents(
  baseUrl: string,
  headers: Record<string, string>,
  query = '',
  onEvent: (e: EventsListener['events'][number]) => void = () => {},
): Promise<EventsListener> {
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/v1/events${query}`, { headers });
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      const events: EventsListener['events'] = [];
      let buffer = '';
      let all = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        all += chunk;
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (!event || !data) continue;
          const e = { event, data: JSON.parse(data) as Record<string, unknown> };
          events.push(e);
          onEvent(e);
        }
      });
      const ended = new Promise<void>((done) => res.on('close', () => done()));
      resolve({ status: res.statusCode!, headers: res.headers, text: () => all, events, ended, close: () => req.destroy() });
    });
    req.end();
  });
}
