/**
 * The recorder on the store under test (api/recordings/recorder.ts, api/store/recordings.ts): a
 * row per recording, written before its first stream's frames, which wait for it; the row made
 * final when the session closes, even while its recording was still starting; a session recorded
 * by an earlier run, or unknown, never recorded; and the rows the retention and the repair read.
 * In the database (PostgreSQL's default): each finished stretch copied into chunks, the file
 * deleted once the session's copy holds it, and at start-up what a killed run left repaired,
 * copied and deleted, while a peer's recordings and files without a row are left alone.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { gunzipSync, gzipSync } from 'node:zlib';
import { chunkReader } from '../../../../api/recordings/chunks';
import { describe, expect, it, vi } from 'vitest';
import { createRecorder } from '../../../../api/recordings/recorder';
import type { Store } from '../../../../api/store/index';
import type { RecordingRow } from '../../../../api/store/recordings';
import { silentLogger } from '../../../../shared/log';
import type { StreamGrant } from '../../../../shared/protocol/session-stream';
import { parseCastStrict } from '../../../helpers/asciicast';
import { onPostgres, storeForEachTest } from '../../../helpers/store';
import { tempDir } from '../../../helpers/stack';

const BINARY = 2;
const t0 = Date.parse('2026-01-01T00:00:00Z');
const grant = (sessionId: string): StreamGrant => ({ sessionId, deviceId: 'dev-1', protocol: 'shell', expiresAt: '2026-01-01T01:00:00.000Z' });

async function openSession(store: Store, sessionId: string): Promise<void> {
  await store.sessions.insert({
    session_id: sessionId,
    device_id: 'dev-1',
    protocol: 'shell',
    ttl_seconds: 3600,
    opened_by: 'ann',
    token_id: null,
    token_expires_at: null,
    opened_at: '2026-01-01T00:00:00.000Z',
    expires_at: '2026-01-01T01:00:00.000Z',
    trace_id: `trace-${sessionId}`,
    targets: null,
  });
}

/** A recorder; `inDatabase` as given (undefined: the store's default), files only unless said. */
function recorderOn(store: Store, options: { inDatabase?: boolean | undefined; retentionDays?: number } = { inDatabase: false }) {
  const dir = join(tempDir(), 'recordings');
  const settings = {
    dir,
    recordShell: true,
    recordInput: false,
    maxStoredBytes: 1 << 30,
    retentionDays: options.retentionDays ?? 0,
    inDatabase: options.inDatabase,
  };
  const recorder = createRecorder(store, settings, silentLogger, () => t0);
  return { dir, recorder };
}

/** The cast the database holds of a recording, read back as a peer reads it. */
async function castInDatabase(store: Store, sessionId: string): Promise<string> {
  const { bytes } = await store.recordings.chunkTotals(sessionId);
  return gunzipSync(await buffer(chunkReader(store, sessionId, bytes))).toString('utf8');
}

function output(stream: ReturnType<ReturnType<typeof recorderOn>['recorder']['port']['start']>, text: string): void {
  const bytes = Buffer.from(text);
  stream!.fromDevice.frame(true, BINARY, bytes.length);
  stream!.fromDevice.payload(bytes);
}

const row = (over: Partial<RecordingRow> & Pick<RecordingRow, 'session_id'>) => ({
  device_id: 'dev-1',
  username: 'ann',
  started_at: '2026-01-01T00:00:00.000Z',
  sha256: 'e3b0',
  input: false,
  file: `${over.session_id}.cast.gz`,
  ...over,
});

describe('the recorder', () => {
  const store = storeForEachTest();

  it('records a stream whose frames came before its row was written, and makes the row final at the close', async () => {
    await openSession(store, 's1');
    const { dir, recorder } = recorderOn(store);
    const stream = recorder.port.start(grant('s1'), 'stream-1');
    output(stream, 'hello ');
    output(stream, 'world');
    stream!.end();
    recorder.sessionClosed('s1'); // while its recording is still starting
    await recorder.stop();
    const text = gunzipSync(readFileSync(join(dir, 's1.cast.gz'))).toString('utf8');
    const cast = parseCastStrict(text);
    expect(cast.events.map((e) => e[2]).join('')).toBe('hello world');
    expect(cast.header).toMatchObject({ tether: { session_id: 's1', device_id: 'dev-1', user: 'ann', input: false } });
    expect(await store.recordings.get('s1')).toMatchObject({
      username: 'ann',
      started_at: '2026-01-01T00:00:00.000Z',
      ended_at: '2026-01-01T00:00:00.000Z',
      bytes: Buffer.byteLength(text),
      sha256: createHash('sha256').update(text).digest('hex'),
      truncated: false,
      input: false,
    });
    expect(await store.recordings.totalStored()).toBe((await store.recordings.get('s1'))!.stored_bytes);
  });

  it("says a stream is being recorded again when the session's next stream starts", async () => {
    await openSession(store, 's2');
    const { recorder } = recorderOn(store);
    const first = recorder.port.start(grant('s2'), 'stream-1');
    output(first, 'one');
    first!.end();
    await vi.waitFor(async () => expect((await store.recordings.get('s2'))?.ended_at).not.toBeNull());
    const second = recorder.port.start(grant('s2'), 'stream-2');
    await vi.waitFor(async () => expect((await store.recordings.get('s2'))?.ended_at).toBeNull());
    output(second, 'two');
    second!.end();
    recorder.sessionClosed('s2');
    await recorder.stop();
    expect((await store.recordings.get('s2'))?.ended_at).not.toBeNull();
  });

  it('records neither a session an earlier run recorded nor one it does not know', async () => {
    await openSession(store, 'old');
    await store.recordings.insert(row({ session_id: 'old' }));
    const { dir, recorder } = recorderOn(store);
    for (const id of ['old', 'unknown']) {
      const stream = recorder.port.start(grant(id), 'stream-1');
      output(stream, 'not kept');
      stream!.end();
      recorder.sessionClosed(id);
    }
    await recorder.stop();
    expect(existsSync(join(dir, 'old.cast.gz'))).toBe(false);
    expect(existsSync(join(dir, 'unknown.cast.gz'))).toBe(false);
    expect(await store.recordings.get('old')).toMatchObject({ ended_at: null, bytes: 0 });
    expect(await store.recordings.get('unknown')).toBeUndefined();
  });

  it('records no stream of another protocol', () => {
    const { recorder } = recorderOn(store);
    expect(recorder.port.start({ ...grant('s3'), protocol: 'file-transfer' }, 'stream-1')).toBeUndefined();
  });
});

describe('recording rows', () => {
  const store = storeForEachTest();

  it('reads back what was written, flags as booleans', async () => {
    await store.recordings.insert(row({ session_id: 'a', input: true }));
    await store.recordings.insert({ ...row({ session_id: 'b' }), truncated: true });
    expect(await store.recordings.get('a')).toEqual({
      ...row({ session_id: 'a', input: true }),
      ended_at: null,
      duration_s: 0,
      bytes: 0,
      stored_bytes: 0,
      truncated: false,
    });
    expect(await store.recordings.get('b')).toMatchObject({ truncated: true, input: false });
    expect(await store.recordings.get('c')).toBeUndefined();
  });

  it('updates where a recording stands, reopens it, and lists the unfinished and the old ones', async () => {
    expect(await store.recordings.totalStored()).toBe(0);
    for (const id of ['a', 'b', 'c']) await store.recordings.insert(row({ session_id: id }));
    const progress = { duration_s: 1.5, bytes: 100, sha256: 'ff', stored_bytes: 40, truncated: true };
    await store.recordings.update('a', { ...progress, ended_at: '2026-01-03T00:00:00.000Z' });
    await store.recordings.update('b', { ...progress, ended_at: '2026-01-02T00:00:00.000Z', stored_bytes: 2 });
    expect(await store.recordings.get('a')).toMatchObject({ ...progress, ended_at: '2026-01-03T00:00:00.000Z' });
    expect(await store.recordings.totalStored()).toBe(42);
    expect((await store.recordings.unfinished()).map((r) => r.session_id)).toEqual(['c']);
    expect((await store.recordings.endedBefore('2026-01-04T00:00:00.000Z')).map((r) => r.session_id)).toEqual(['b', 'a']);
    expect((await store.recordings.endedBefore('2026-01-03T00:00:00.000Z')).map((r) => r.session_id)).toEqual(['b']);
    await store.recordings.reopen('a');
    expect((await store.recordings.unfinished()).map((r) => r.session_id).sort()).toEqual(['a', 'c']);
    expect(await store.recordings.delete('b')).toBe(true);
    expect(await store.recordings.delete('b')).toBe(false);
    expect(await store.recordings.totalStored()).toBe(40);
  });
});

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

describe('recordings in the database', () => {
  const store = storeForEachTest();

  it('copies each finished stretch while the session goes on, and deletes the file once the copy holds the whole session', async () => {
    await openSession(store, 's1');
    const { dir, recorder } = recorderOn(store, { inDatabase: true });
    const file = join(dir, 's1.cast.gz');
    const first = recorder.port.start(grant('s1'), 'stream-1');
    output(first, 'one ');
    first!.end();
    await vi.waitFor(async () => expect((await store.recordings.chunkTotals('s1')).chunks).toBe(1));
    const stretch = (await store.recordings.get('s1'))!;
    expect(stretch.ended_at).not.toBeNull();
    expect((await store.recordings.chunkTotals('s1')).bytes).toBe(stretch.stored_bytes);
    expect(existsSync(file)).toBe(true); // the session goes on: its next stream appends to it
    expect(sha256(await castInDatabase(store, 's1'))).toBe(stretch.sha256);

    const second = recorder.port.start(grant('s1'), 'stream-2');
    output(second, 'two');
    second!.end();
    recorder.sessionClosed('s1');
    await recorder.stop();
    expect(existsSync(file)).toBe(false);
    const final = (await store.recordings.get('s1'))!;
    const cast = await castInDatabase(store, 's1');
    expect(parseCastStrict(cast).events.map((e) => e[2])).toEqual(['one ', 'stream 2', 'two']);
    expect(final).toMatchObject({ bytes: Buffer.byteLength(cast), sha256: sha256(cast) });
    expect((await store.recordings.chunkTotals('s1')).bytes).toBe(final.stored_bytes);
  });

  it('is where recordings go on PostgreSQL by default; on SQLite they stay files only', async () => {
    await openSession(store, 's1');
    const { dir, recorder } = recorderOn(store, { inDatabase: undefined });
    const stream = recorder.port.start(grant('s1'), 'stream-1');
    output(stream, 'hello');
    stream!.end();
    recorder.sessionClosed('s1');
    await recorder.stop();
    expect(existsSync(join(dir, 's1.cast.gz'))).toBe(!onPostgres);
    expect((await store.recordings.chunkTotals('s1')).chunks).toBe(onPostgres ? 1 : 0);
  });

  it('at start-up, repairs and copies what a killed run left here, copies the files the database lacks, and leaves the rest alone', async () => {
    const { dir, recorder } = recorderOn(store, { inDatabase: true });
    mkdirSync(dir, { recursive: true });
    const header = '{"version":2,"width":80,"height":24}\n';
    const lines = (...events: string[]) => header + events.map((e) => `[1.5,"o","${e}"]\n`).join('');
    const fileOf = (id: string) => join(dir, `${id}.cast.gz`);
    const ended = async (id: string, text: string, stored: Buffer) => {
      await store.recordings.insert(row({ session_id: id }));
      const progress = { ended_at: '2026-01-01T00:00:00.000Z', duration_s: 1.5, truncated: false };
      await store.recordings.update(id, { ...progress, bytes: Buffer.byteLength(text), sha256: sha256(text), stored_bytes: stored.length });
    };
    // killed mid-batch: its last line cut short
    await store.recordings.insert(row({ session_id: 'cut' }));
    writeFileSync(fileOf('cut'), gzipSync(`${lines('kept')}[2,"o","cut sh`));
    // being recorded by a peer: no file here
    await store.recordings.insert(row({ session_id: 'peer' }));
    // finished, never copied
    const done = gzipSync(lines('done'));
    await ended('done', lines('done'), done);
    writeFileSync(fileOf('done'), done);
    // finished and copied, killed before its file was deleted
    const held = gzipSync(lines('held'));
    await ended('held', lines('held'), held);
    await store.recordings.insertChunk('held', 0, held);
    writeFileSync(fileOf('held'), held);
    // killed as its next stream began: the file holds more than the row
    const grownFirst = gzipSync(lines('first'));
    await ended('grown', lines('first'), grownFirst);
    writeFileSync(fileOf('grown'), Buffer.concat([grownFirst, gzipSync('[3,"o","second"]\n')]));
    // no row: not this database's
    writeFileSync(fileOf('orphan'), gzipSync(lines('orphan')));

    await recorder.start();
    await recorder.stop();

    expect(await castInDatabase(store, 'cut')).toBe(lines('kept'));
    expect(await store.recordings.get('cut')).toMatchObject({ ended_at: expect.any(String), sha256: sha256(lines('kept')) });
    expect(await castInDatabase(store, 'done')).toBe(lines('done'));
    expect(await castInDatabase(store, 'held')).toBe(lines('held'));
    expect(await castInDatabase(store, 'grown')).toBe(`${lines('first')}[3,"o","second"]\n`);
    expect(await store.recordings.get('grown')).toMatchObject({ sha256: sha256(`${lines('first')}[3,"o","second"]\n`) });
    for (const id of ['cut', 'done', 'held', 'grown']) {
      expect(existsSync(fileOf(id)), id).toBe(false);
      const r = (await store.recordings.get(id))!;
      expect((await store.recordings.chunkTotals(id)).bytes, id).toBe(r.stored_bytes);
    }
    expect(await store.recordings.get('peer')).toMatchObject({ ended_at: null, bytes: 0 });
    expect(existsSync(fileOf('peer'))).toBe(false);
    expect(existsSync(fileOf('orphan'))).toBe(true);
  });

  it('retention deletes an old recording with its chunks', async () => {
    const { recorder } = recorderOn(store, { inDatabase: true, retentionDays: 1 });
    for (const [id, endedAt] of [
      ['old', '2025-12-30T00:00:00.000Z'],
      ['new', '2025-12-31T12:00:00.000Z'],
    ] as const) {
      await store.recordings.insert(row({ session_id: id }));
      await store.recordings.update(id, { ended_at: endedAt, duration_s: 1, bytes: 1, sha256: 'ff', stored_bytes: 3, truncated: false });
      await store.recordings.insertChunk(id, 0, Buffer.from('gz!'));
    }
    expect(await recorder.purge()).toBe(1);
    expect(await store.recordings.get('old')).toBeUndefined();
    expect(await store.recordings.chunkTotals('old')).toEqual({ chunks: 0, bytes: 0 });
    expect(await store.recordings.chunkTotals('new')).toEqual({ chunks: 1, bytes: 3 });
    expect(await store.recordings.totalStored()).toBe(3);
  });
});
