/**
 * The recording of an exec stream (docs/session-streams.md, exec) fed through the relay's taps:
 * its command line becomes a marker when the device says it runs, its stderr output beside its
 * stdout, and a request too big for a recorder's message is named without its words.
 */
import { describe, expect, it } from 'vitest';
import type { FrameTap } from '../../../../shared/relay/recording';
import { unitRecording } from '../../../helpers/session-recording';

const TEXT = 1;
const BINARY = 2;

/** Passes one whole frame through a tap, its payload in slices of at most `slice` bytes. */
function frame(tap: FrameTap, opcode: number, payload: Buffer | string | object, slice = 1000): void {
  const bytes = Buffer.isBuffer(payload) ? payload : Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  tap.frame(true, opcode, bytes.length);
  for (let at = 0; at < bytes.length; at += slice) tap.payload(bytes.subarray(at, at + slice));
}

/** Records one stream: `feed` drives its taps; resolves with the cast's events as [code, data]. */
async function record(feed: (client: FrameTap, device: FrameTap) => void): Promise<Array<[string, string]>> {
  const { rec, cast } = unitRecording('sess-exec');
  const stream = rec.streamStarted();
  feed(stream.fromClient, stream.fromDevice);
  stream.end();
  await rec.close();
  return cast().events.map((e) => [e[1], e[2]]);
}

const stderr = (bytes: Buffer) => ({ type: 'stderr', data: bytes.toString('base64') });

describe('the recording of an exec stream', () => {
  it('marks the command line once the device says it runs, and shows stderr as output beside stdout', async () => {
    const euro = Buffer.from('€\n'); // its bytes cut across two stderr messages
    const events = await record((client, device) => {
      frame(client, TEXT, { type: 'exec', argv: ['sh', '-c', "echo it's; ls *"] });
      frame(device, TEXT, { type: 'exec.started' });
      frame(device, BINARY, Buffer.from('out\n'));
      frame(device, TEXT, stderr(euro.subarray(0, 1)));
      frame(device, TEXT, stderr(euro.subarray(1)));
      frame(client, TEXT, { type: 'eof' });
      frame(device, TEXT, { type: 'exit', code: 2, signal: null });
    });
    expect(events).toEqual([
      ['m', `exec sh -c 'echo it'\\''s; ls *'`],
      ['o', 'out\n'],
      ['o', '€\n'],
      ['m', 'exit 2'],
    ]);
  });

  it('marks nothing for an exec request the device did not run (a shell stream, or a refused request)', async () => {
    const events = await record((client, device) => {
      frame(client, TEXT, { type: 'exec', argv: ['printf', 'x'] });
      frame(device, BINARY, Buffer.from('$ '));
    });
    expect(events).toEqual([['o', '$ ']]);
  });

  it('names a request over 4 KiB without its words', async () => {
    const events = await record((client, device) => {
      frame(client, TEXT, { type: 'exec', argv: ['echo', 'x'.repeat(4000), 'y'.repeat(4000)] }, 700);
      frame(device, TEXT, { type: 'exec.started' });
      frame(device, TEXT, { type: 'exit', code: 0, signal: null });
    });
    expect(events).toEqual([
      ['m', 'exec (a command line over 4 KiB)'],
      ['m', 'exit 0'],
    ]);
  });
});
