/**
 * The other side of a cluster node in its unit tests: a plain NATS client on the test's
 * `nats-server`, speaking JSON on the subjects of shared/protocol/cluster.ts as a node (to test the control
 * node) or as the control node (to test an edge) would. Closed when the test file ends.
 */
import { connect, headers as natsHeaders, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { afterAll } from 'vitest';
import { waitFor } from './wait';

const open = new Set<NatsConnection>();
afterAll(async () => {
  await Promise.all([...open].map((nc) => nc.close().catch(() => {})));
});

/** A message the peer received, its body parsed. */
export interface Received {
  subject: string;
  body: any;
  headers: Record<string, string>;
  /** The raw bytes (recordings are not JSON). */
  data: Uint8Array;
  msg: Msg;
}

export interface BusPeer {
  nc: NatsConnection;
  /** A request; resolves with the parsed answer, or `'no answer'` when nobody answers within `timeoutMs`. */
  ask(subject: string, body: unknown, timeoutMs?: number): Promise<any>;
  /** Publishes and waits until the server has it. */
  tell(subject: string, body: unknown): Promise<void>;
  /** Publishes bytes with headers (recordings). */
  tellRaw(subject: string, data: Uint8Array, headers: Record<string, string>): Promise<void>;
  /**
   * Records every message on `subject` (wildcards allowed); `answer`, when given, replies to
   * requests (undefined from it: no reply, so the requester times out).
   */
  listen(subject: string, answer?: (m: Received) => unknown): Promise<Received[]>;
  /** Waits until `list` holds a message that `match` accepts, and returns it. */
  next(list: Received[], match?: (m: Received) => boolean, what?: string, timeoutMs?: number): Promise<Received>;
  close(): Promise<void>;
}

const decode = (data: Uint8Array): unknown => {
  try {
    return JSON.parse(Buffer.from(data).toString('utf8'));
  } catch {
    return undefined;
  }
};

export async function busPeer(url: string): Promise<BusPeer> {
  const nc = await connect({ servers: url, reconnectTimeWait: 100 });
  open.add(nc);
  return {
    nc,
    async ask(subject, body, timeoutMs = 1_000) {
      try {
        return decode((await nc.request(subject, JSON.stringify(body), { timeout: timeoutMs })).data);
      } catch {
        return 'no answer';
      }
    },
    async tell(subject, body) {
      nc.publish(subject, JSON.stringify(body));
      await nc.flush();
    },
    async tellRaw(subject, data, hdrs) {
      const h = natsHeaders();
      for (const [k, v] of Object.entries(hdrs)) h.set(k, v);
      nc.publish(subject, data, { headers: h });
      await nc.flush();
    },
    async listen(subject, answer) {
      const got: Received[] = [];
      nc.subscribe(subject, {
        callback: (_err, msg) => {
          const headers: Record<string, string> = {};
          for (const k of msg.headers?.keys() ?? []) headers[k] = msg.headers!.get(k);
          const m: Received = { subject: msg.subject, body: decode(msg.data), headers, data: msg.data, msg };
          got.push(m);
          if (answer && msg.reply) {
            const reply = answer(m);
            if (reply !== undefined) msg.respond(JSON.stringify(reply));
          }
        },
      });
      await nc.flush(); // subscribed on the server before anyone publishes
      return got;
    },
    next: (list, match = () => true, what = 'a message', timeoutMs = 5_000) => waitFor(() => list.find(match), what, timeoutMs, 5),
    async close() {
      open.delete(nc);
      await nc.close();
    },
  };
}
