/**
 * @module What the peer of a port-forward stream sends (`./protocol`), read and checked against
 * the connections it names: control messages between records, never inside one; data only for
 * open connections, within their windows; `open` only from the client, each id once; before the
 * device answered an open, the client may only give up. The first thing that breaks the protocol
 * ends the stream (the mux's `onProtocolError`), and nothing the peer sends after it is acted on.
 */
import { parseTextFrame } from '../text-frame';
import type { ForwardConnection, ConnectionReport } from './connection';
import { forwardMessage, knownReason, type ForwardMessage } from './protocol';
import { createRecordReader } from './records';

/** What the peer's messages act on: the mux. */
export interface InboundTarget {
  connection(id: number): ForwardConnection | undefined;
  /** Device side: ids asked for and not answered yet (true: the client gave up meanwhile). */
  readonly pending: Map<number, { cancelled: boolean }>;
  /** Device side: the peer asks for connection `id` to `target`; none on the client side. */
  readonly onOpenRequest: ((id: number, target: string) => void) | undefined;
  /** Client side: connection `c` reached its target. */
  opened(c: ForwardConnection): void;
  drop(c: ForwardConnection, reset: NonNullable<ConnectionReport['reset']>, tellPeer: boolean): void;
  protocolError(why: string): void;
}

export function createInbound(mux: InboundTarget) {
  let failed = false;
  const records = createRecordReader({ data, invalid: fail });

  function fail(why: string): void {
    if (failed) return;
    failed = true;
    mux.protocolError(why);
  }

  function message(m: ForwardMessage): void {
    if (m.type === 'open') {
      if (!mux.onOpenRequest) return fail('only the client opens connections');
      if (mux.connection(m.id) || mux.pending.has(m.id)) return fail(`connection ${m.id} is open already`);
      mux.pending.set(m.id, { cancelled: false });
      return mux.onOpenRequest(m.id, m.target);
    }
    const pending = mux.pending.get(m.id);
    if (pending) {
      // Before the device answered, the client may only give up.
      if (m.type === 'reset') pending.cancelled = true;
      else fail(`a ${m.type} message for connection ${m.id}, which is not open yet`);
      return;
    }
    const c = mux.connection(m.id);
    if (!c) return; // one that ended while this message was on its way
    switch (m.type) {
      case 'opened':
        if (c.state !== 'opening' || mux.onOpenRequest) return fail(`connection ${m.id} opened twice`);
        return mux.opened(c);
      case 'credit':
        return c.credit(m.bytes);
      case 'end':
        if (c.state === 'opening') return fail(`an end for connection ${m.id} before it opened`);
        return c.remoteEnd();
      case 'reset':
        return mux.drop(c, { reason: knownReason(m.reason), by: 'peer', message: m.message }, false);
    }
  }

  /** Bytes for connection `id` from the peer. */
  function data(id: number, slice: Buffer): void {
    const c = mux.connection(id);
    if (!c) {
      if (mux.pending.has(id)) fail(`data for connection ${id}, which is not open yet`);
      return; // one that ended while its bytes were on their way
    }
    if (c.state === 'opening') return fail(`data for connection ${id} before it opened`);
    if (c.remoteEnded) return; // nothing may follow an end
    if (slice.length > c.recvWindow) {
      return mux.drop(c, { reason: 'protocol', by: 'us', message: `the peer sent more than its window of ${c.window} bytes` }, true);
    }
    c.receive(slice);
  }

  return {
    /** A text frame of the stream. */
    text(text: string): void {
      if (failed) return;
      // Messages go between records, never inside one (a sender writes a record whole first).
      if (records.midRecord) return fail('a message in the middle of a data record');
      const parsed = parseTextFrame(forwardMessage, text);
      if (!parsed) return fail('a text frame that is not a port-forward message');
      message(parsed);
    },

    /** The next bytes of the stream's binary frames. */
    binary(chunk: Buffer): void {
      if (!failed) records.push(chunk);
    },
  };
}
