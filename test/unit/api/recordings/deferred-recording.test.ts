/**
 * A stream's recording while its session's recording starts (api/recordings/deferred-recording.ts):
 * what the taps see meanwhile is handed over in order once it has started, then passed straight
 * on; nothing is kept when the stream is not recorded, or when too much waited.
 */
import { describe, expect, it } from 'vitest';
import { deferredRecording } from '../../../../api/recordings/deferred-recording';
import type { StreamRecording } from '../../../../shared/relay/recording';

/** A recording that notes every call it gets. */
function noting() {
  const calls: string[] = [];
  const tap = (side: string) => ({
    frame: (fin: boolean, opcode: number, length: number) => calls.push(`${side} frame ${fin} ${opcode} ${length}`),
    payload: (slice: Buffer) => calls.push(`${side} payload ${slice.toString()}`),
  });
  const recording: StreamRecording = { fromClient: tap('client'), fromDevice: tap('device'), end: () => calls.push('end') };
  return { calls, recording };
}

/** A start that resolves when told. */
function pending<T>() {
  let resolve!: (value: T | undefined) => void;
  const promise = new Promise<T | undefined>((r) => (resolve = r));
  return { promise, resolve };
}

const settled = () => new Promise((r) => setImmediate(r));

describe('a deferred stream recording', () => {
  it('hands over what waited, in order, once started; then passes everything straight on', async () => {
    const { calls, recording } = noting();
    const start = pending<string>();
    const opened: string[] = [];
    const deferred = deferredRecording(start.promise, (value) => {
      opened.push(value);
      return recording;
    });
    const slice = Buffer.from('hello');
    deferred.fromDevice.frame(true, 2, 5);
    deferred.fromDevice.payload(slice);
    slice.fill('x'); // the socket's buffer is read again: what waited is a copy
    deferred.fromClient.frame(true, 1, 2);
    deferred.fromClient.payload(Buffer.from('hi'));
    expect(calls).toEqual([]);
    start.resolve('s1');
    await settled();
    expect(opened).toEqual(['s1']);
    expect(calls).toEqual(['device frame true 2 5', 'device payload hello', 'client frame true 1 2', 'client payload hi']);
    deferred.fromDevice.frame(true, 2, 3);
    deferred.fromDevice.payload(Buffer.from('bye'));
    deferred.end();
    deferred.end();
    expect(calls.slice(4)).toEqual(['device frame true 2 3', 'device payload bye', 'end']);
  });

  it('ends the recording when the stream ended before it started', async () => {
    const { calls, recording } = noting();
    const start = pending<string>();
    const deferred = deferredRecording(start.promise, () => recording);
    deferred.fromDevice.frame(true, 2, 1);
    deferred.fromDevice.payload(Buffer.from('a'));
    deferred.end();
    start.resolve('s1');
    await settled();
    expect(calls).toEqual(['device frame true 2 1', 'device payload a', 'end']);
  });

  it('keeps nothing when the stream is not recorded', async () => {
    const start = pending<string>();
    let opened = false;
    const deferred = deferredRecording(start.promise, () => {
      opened = true;
      return noting().recording;
    });
    deferred.fromDevice.frame(true, 2, 1);
    deferred.fromDevice.payload(Buffer.from('a'));
    start.resolve(undefined);
    await settled();
    deferred.fromDevice.frame(true, 2, 1);
    deferred.fromDevice.payload(Buffer.from('b'));
    deferred.end();
    expect(opened).toBe(false);
  });

  it('records nothing of a stream that passed more than 16 MiB while its recording started', async () => {
    const { calls, recording } = noting();
    const start = pending<string>();
    const deferred = deferredRecording(start.promise, () => recording);
    const big = Buffer.alloc(17 * 1024 * 1024, 'a');
    deferred.fromDevice.frame(true, 2, big.length + 1);
    deferred.fromDevice.payload(big);
    deferred.fromDevice.payload(Buffer.from('b'));
    start.resolve('s1');
    await settled();
    expect(calls).toEqual(['end']);
    deferred.fromDevice.frame(true, 2, 1);
    deferred.end();
    expect(calls).toEqual(['end']);
  });
});
