/**
 * One session's recording (api/recordings/session-recording.ts) fed through the relay's taps as
 * frames split anywhere: a UTF-8 character cut at any byte survives whole, and the file is a valid
 * multi-member gzip of a cast whatever the cut.
 */
import { describe, expect, it } from 'vitest';
import { parseCastStrict } from '../../../helpers/asciicast';
import { unitRecording } from '../../../helpers/session-recording';

const BINARY = 2;

async function record(slices: Buffer[], options: { maxStoredBytes?: number } = {}) {
  const { rec, progress, castText } = unitRecording('sess-unit', options);
  const stream = rec.streamStarted();
  // One frame whose payload arrives as these slices, as the relay passes it on.
  stream.fromDevice.frame(
    true,
    BINARY,
    slices.reduce((n, s) => n + s.length, 0),
  );
  for (const s of slices) stream.fromDevice.payload(s);
  stream.end();
  await rec.close();
  const text = castText();
  return { text, cast: parseCastStrict(text), progress: progress.at(-1)! };
}

describe('a session recording', () => {
  const text = 'a é € 😀 z';
  const bytes = Buffer.from(text);

  it('keeps every character whole wherever its bytes are cut', async () => {
    for (let cut = 1; cut < bytes.length; cut++) {
      const { cast } = await record([bytes.subarray(0, cut), bytes.subarray(cut)]);
      expect(cast.events.map((e) => e[2]).join(''), `cut at ${cut}`).toBe(text);
    }
    const { cast } = await record([...bytes].map((b) => Buffer.from([b]))); // a byte at a time
    expect(cast.events.map((e) => e[2]).join('')).toBe(text);
  });

  it('says how large the cast is and what its SHA-256 is, and when it ended', async () => {
    const { text: cast, progress } = await record([bytes]);
    const { createHash } = await import('node:crypto');
    expect(progress).toMatchObject({
      bytes: Buffer.byteLength(cast),
      sha256: createHash('sha256').update(cast).digest('hex'),
      truncated: false,
      ended_at: '2026-01-01T00:01:00.000Z',
    });
  });

  it('stops at its size cap, keeping the header and what came before, and says it was truncated', async () => {
    const { randomBytes } = await import('node:crypto');
    const noise = Buffer.from(randomBytes(400_000).toString('base64'));
    const slices = [];
    for (let at = 0; at < noise.length; at += 16_384) slices.push(noise.subarray(at, at + 16_384));
    const { cast, progress } = await record(slices, { maxStoredBytes: 100_000 });
    expect(progress.truncated).toBe(true);
    expect(progress.stored_bytes).toBeLessThanOrEqual(100_000);
    const kept = cast.events.map((e) => e[2]).join('');
    expect(kept.length).toBeGreaterThan(0);
    expect(noise.toString().startsWith(kept)).toBe(true); // a prefix, nothing made up
  });

  it('a session closed while a stream on another node is still recorded waits for its last frames and its end', async () => {
    const { rec, progress, cast } = unitRecording('sess-late');
    const stream = rec.streamStarted();
    const closed = rec.close(); // the session closed; the edge has not sent its frames yet
    let done = false;
    void closed.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toBe(false);
    const late = Buffer.from('the last words');
    stream.fromDevice.frame(true, BINARY, late.length);
    stream.fromDevice.payload(late);
    stream.end();
    await closed;
    expect(
      cast()
        .events.map((e) => e[2])
        .join(''),
    ).toBe('the last words');
    expect(progress.at(-1)!.ended_at).not.toBeNull();
  });
});
