/**
 * The port-forward mux (shared/protocol/port-forward/mux.ts) on the device side, against the defences a
 * hostile or careless peer tests: what a stalled connection keeps in memory, how much credit
 * tiny records earn, connections accepted while the stream is backed up, messages inside a
 * record, and reset reasons from a newer peer. The TCP sockets are Node Duplex streams whose
 * writes complete only when the test says so (a reader that stalls), since a real loopback
 * socket's kernel buffers take megabytes before anything waits in Node.
 */
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ForwardMux, type ConnectionReport } from '../../../../../shared/protocol/port-forward/mux';
import { recordHeader, type ForwardMessage } from '../../../../../shared/protocol/port-forward/protocol';

/** A socket whose writes are held (not completed) until `release()`. */
function stalledSocket() {
  const held: Buffer[] = [];
  const callbacks: Array<() => void> = [];
  let stalled = true;
  const duplex = new Duplex({
    allowHalfOpen: true,
    read() {},
    write(chunk: Buffer, _enc, cb) {
      held.push(chunk);
      if (stalled) callbacks.push(cb);
      else cb();
    },
  });
  const socket = Object.assign(duplex, {
    setNoDelay: () => socket,
    resetAndDestroy: () => duplex.destroy(),
    readyState: 'open',
  }) as unknown as Socket;
  return {
    socket,
    held,
    release() {
      stalled = false;
      for (const cb of callbacks.splice(0)) cb();
    },
  };
}

function deviceMux(buffered = 0) {
  const sent: ForwardMessage[] = [];
  const errors: string[] = [];
  const closed: ConnectionReport[] = [];
  const requests: Array<[number, string]> = [];
  const transport = { buffered, sendMessage: (m: ForwardMessage) => sent.push(m), sendRecords: () => {} };
  const mux = new ForwardMux(transport, {
    highWaterMark: 1024,
    onProtocolError: (why) => errors.push(why),
    onOpenRequest: (id, target) => requests.push([id, target]),
    onClosed: (r) => closed.push(r),
  });
  return { mux, sent, errors, closed, requests, transport };
}

const record = (id: number, data: Buffer) => Buffer.concat([recordHeader(id, data.length), data]);
const tick = () => new Promise((r) => setImmediate(r));

describe('the port-forward mux', () => {
  it('never keeps a whole read alive for a few bytes of a stalled connection', async () => {
    const { mux } = deviceMux();
    const s = stalledSocket();
    mux.text(JSON.stringify({ type: 'open', id: 1, target: '127.0.0.1:1' }));
    mux.accept(1, '127.0.0.1:1', s.socket);
    // One read of the stream: a byte for connection 1, then 64 KiB for a connection that is not open.
    const read = Buffer.concat([record(1, Buffer.from('x')), record(99, Buffer.alloc(64 * 1024))]);
    mux.binary(read);
    await tick();
    expect(Buffer.concat(s.held).toString()).toBe('x');
    for (const chunk of s.held) expect(chunk.buffer.byteLength).toBeLessThan(read.length / 2);
  });

  it('grants credit in batches, not once per tiny record', async () => {
    const { mux, sent } = deviceMux();
    const s = stalledSocket();
    s.release(); // a reader that keeps up
    mux.text(JSON.stringify({ type: 'open', id: 1, target: '127.0.0.1:1' }));
    mux.accept(1, '127.0.0.1:1', s.socket);
    for (let i = 0; i < 2000; i++) {
      mux.binary(record(1, Buffer.from('y')));
      await tick();
    }
    expect(s.held.reduce((n, b) => n + b.length, 0)).toBe(2000);
    expect(sent.filter((m) => m.type === 'credit')).toEqual([]); // 2,000 bytes: far from a batch
  });

  it('does not read a connection it accepts while the stream is backed up', () => {
    const { mux, transport } = deviceMux();
    const busy = stalledSocket();
    mux.text(JSON.stringify({ type: 'open', id: 1, target: '127.0.0.1:1' }));
    mux.accept(1, '127.0.0.1:1', busy.socket);
    transport.buffered = 1 << 20; // past the high-water mark
    busy.socket.emit('data', Buffer.alloc(10)); // its bytes back the stream up
    const late = stalledSocket();
    mux.text(JSON.stringify({ type: 'open', id: 2, target: '127.0.0.1:1' }));
    mux.accept(2, '127.0.0.1:1', late.socket);
    expect(late.socket.isPaused()).toBe(true);
    expect(busy.socket.isPaused()).toBe(true);
  });

  it('fails the stream at a message inside a record, once, and acts on nothing after', () => {
    const { mux, errors, requests } = deviceMux();
    const half = record(1, Buffer.from('abcdef')).subarray(0, 10);
    mux.binary(half);
    mux.text(JSON.stringify({ type: 'open', id: 5, target: '127.0.0.1:1' }));
    mux.text(JSON.stringify({ type: 'open', id: 6, target: '127.0.0.1:1' }));
    expect(errors).toEqual(['a message in the middle of a data record']);
    expect(requests).toEqual([]);
  });

  it('takes a reset reason it does not know as error', () => {
    const { mux, closed } = deviceMux();
    const s = stalledSocket();
    mux.text(JSON.stringify({ type: 'open', id: 1, target: '127.0.0.1:1' }));
    mux.accept(1, '127.0.0.1:1', s.socket);
    mux.text(JSON.stringify({ type: 'reset', id: 1, reason: 'quota', message: 'from a newer peer' }));
    expect(closed).toEqual([{ id: 1, target: '127.0.0.1:1', sent: 0, received: 0, reset: { reason: 'error', by: 'peer', message: 'from a newer peer' } }]);
  });
});
