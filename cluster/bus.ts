/**
 * @module The node's bus (docs/cluster.md): messages over its connection to NATS (./bus-link),
 * JSON in and out, every message received checked against its schema (a malformed one is logged
 * and dropped), requests with a deadline, and `up()` saying whether the bus can be used now.
 * Subscriptions outlive the connection: each new one subscribes to them all again.
 */
import { headers as natsHeaders, type Msg, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import type * as z from 'zod/mini';
import { controlWildcard, nodeOfSubject, type ControlVerb } from '../shared/protocol/cluster';
import { createBusLink, type BusLinkOptions } from './bus-link';

export { busAuth, credsName, redactedUrl } from './bus-auth';
export type BusOptions = BusLinkOptions;

/** The bus cannot be used now: not connected, or nobody answered in time. */
export class BusUnavailable extends Error {
  override name = 'BusUnavailable';
}

const REQUEST_TIMEOUT_MS = 2_000;

export interface Incoming<T> {
  body: T;
  /** The node that sent it, from its subject (`tether.control.<node>.<verb>`); empty elsewhere. */
  node: string;
  headers: MsgHdrs | undefined;
  /** Answers a request (does nothing for a published message). */
  reply(body: unknown): void;
}

const encode = (body: unknown): Uint8Array => Buffer.from(JSON.stringify(body));

function decode<T>(schema: z.ZodMiniType<T>, data: Uint8Array): T | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

export function createBus(options: BusOptions) {
  const { log } = options;
  const handlers: Array<{ subject: string; queue?: string; onMessage: (msg: Msg) => void }> = [];
  const subscribe = (conn: NatsConnection, h: (typeof handlers)[number]) =>
    conn.subscribe(h.subject, { queue: h.queue, callback: (_err, msg) => h.onMessage(msg) });
  const link = createBusLink(options, (conn) => {
    for (const h of handlers) subscribe(conn, h);
  });

  /** Handles a subject's messages from now on, on this connection and every later one. */
  function handle(h: (typeof handlers)[number]): void {
    handlers.push(h);
    const conn = link.current();
    if (conn) subscribe(conn, h);
  }

  /** Runs a handler; what it throws or rejects with is logged (a request is then answered with nothing: the requester times out). */
  function guarded(msg: Msg, run: () => void | Promise<void>): void {
    const failed = (err: unknown) => log.error('a cluster message could not be handled', { subject: msg.subject, err: (err as Error).message });
    try {
      const done = run();
      if (done) done.catch(failed);
    } catch (err) {
      failed(err);
    }
  }

  return {
    start: link.start,

    /** Whether requests and publications can go out now. */
    up: link.up,

    /**
     * Handles a subject's messages (requests or publications) with `onBody`; with `queue`, one
     * node of the queue group gets each. Malformed messages are logged and dropped.
     */
    on<T>(subject: string, schema: z.ZodMiniType<T>, onBody: (msg: Incoming<T>) => void | Promise<void>, queue?: string): void {
      handle({
        subject,
        queue,
        onMessage(msg) {
          const body = decode(schema, msg.data);
          if (body === undefined) return void log.warn('dropped a malformed cluster message', { subject: msg.subject });
          guarded(msg, () =>
            onBody({ body, node: nodeOfSubject(msg.subject), headers: msg.headers, reply: (answer) => void (msg.reply && msg.respond(encode(answer))) }),
          );
        },
      });
    },

    /** Handles `verb` from every node (the control node): `node` in what `onBody` gets is the sender. */
    onNode<T>(verb: ControlVerb, schema: z.ZodMiniType<T>, onBody: (msg: Incoming<T>) => void | Promise<void>): void {
      this.on(controlWildcard(verb), schema, onBody);
    },

    /** Handles raw messages of `verb` from every node (bytes and headers, no JSON). */
    onRawNode(verb: ControlVerb, onRaw: (node: string, data: Uint8Array, headers: MsgHdrs | undefined) => void): void {
      handle({ subject: controlWildcard(verb), onMessage: (msg) => guarded(msg, () => onRaw(nodeOfSubject(msg.subject), msg.data, msg.headers)) });
    },

    /** Publishes `body`; false when the bus is down (nothing is queued for later). */
    publish(subject: string, body: unknown): boolean {
      if (!link.up()) return false;
      link.current()!.publish(subject, encode(body));
      return true;
    },

    /** Publishes bytes with headers; false when the bus is down. */
    publishRaw(subject: string, data: Uint8Array, hdrs: Record<string, string>): boolean {
      if (!link.up()) return false;
      const h = natsHeaders();
      for (const [k, v] of Object.entries(hdrs)) h.set(k, v);
      link.current()!.publish(subject, data, { headers: h });
      return true;
    },

    /** Sends a request and checks the reply; BusUnavailable when the bus is down or nobody answers in time. */
    async request<T>(subject: string, body: unknown, schema: z.ZodMiniType<T>, timeoutMs = REQUEST_TIMEOUT_MS): Promise<T> {
      if (!link.up()) throw new BusUnavailable('the cluster bus (NATS) is not connected');
      let msg: Msg;
      try {
        msg = await link.current()!.request(subject, encode(body), { timeout: timeoutMs });
      } catch (err) {
        throw new BusUnavailable(`no answer on ${subject}: ${(err as Error).message}`);
      }
      const reply = decode(schema, msg.data);
      if (reply === undefined) throw new BusUnavailable(`a malformed answer on ${subject}`);
      return reply;
    },

    /** Sends what is queued and closes the connection; stops redialling. */
    close: link.close,
  };
}
export type Bus = ReturnType<typeof createBus>;
