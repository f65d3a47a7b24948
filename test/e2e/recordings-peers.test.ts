/**
 * Recordings on PostgreSQL peers (CONTRACT 10.1: "a recording is readable from every peer, also
 * after the peer that recorded it is gone"), end to end with a real PostgreSQL, servers, agent and
 * shell: the peer that records a session copies its recording into the database in chunks when
 * it ends and deletes its file; another peer with an empty data dir serves the same cast and text,
 * also once the first is stopped and its data dir deleted; a recording still being written on a
 * peer is not found on the others; the retention deletes the row and its chunks.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type Postgres } from '../../bench/postgres';
import { startNats, type NatsServer } from '../helpers/nats';
import { parseCastStrict } from '../helpers/asciicast';
import { closeAndReadRecording, openRecordedShell, runInShell } from '../helpers/recorded-shell';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const DAY_MS = 24 * 3600 * 1000;
const CHUNK_BYTES = 1024 * 1024;

let postgres: Postgres;
let nats: NatsServer;
beforeAll(async () => {
  postgres = await startPostgres();
  nats = await startNats({ open: true });
}, 120_000);
afterAll(async () => {
  await nats?.stop();
  await postgres?.close();
});

/** The chunks the database holds of a recording: how many, and their bytes together. */
async function chunksOf(url: string, sessionId: string): Promise<{ chunks: number; bytes: number }> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    const { rows } = await db.query<{ chunks: string; bytes: string | null }>(
      'SELECT count(*) AS chunks, sum(length(data)) AS bytes FROM recording_chunks WHERE session_id = $1',
      [sessionId],
    );
    return { chunks: Number(rows[0]!.chunks), bytes: Number(rows[0]!.bytes ?? 0) };
  } finally {
    await db.end();
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * A data dir for a peer joining a database that has its administrator already: empty but for the
 * administrator's token (only the first peer's start writes one), which the harness reads.
 */
function peerDataDir(adminToken: string): string {
  const dir = tempDir('tether-peer-');
  writeFileSync(join(dir, 'admin.token'), `${adminToken}\n`, { mode: 0o600 });
  return dir;
}

describe('a recording on PostgreSQL peers', () => {
  it('is read from another peer, also after the one that recorded it is gone with its data dir; the retention deletes its chunks', async () => {
    const url = await postgres.createDatabase();
    const env = { TETHER_DATABASE_URL: url, TETHER_NATS_URL: nats.url };
    const dirA = tempDir('tether-peer-a-');
    const a = await startStack({ dataDir: dirA, env });
    const started: Stack[] = [a];
    try {
      const ann = await a.userToken('peer-ann', 'platform-engineer');
      await a.onlineDevice('peer-dev');
      const { session, c } = await openRecordedShell(a, ann, 'peer-dev');
      const id = session.session_id;
      await runInShell(c, 'echo typed-on-a-$((6*7))', /typed-on-a-42/);
      // Random bytes barely compress: the recording spans several chunks.
      await runInShell(c, 'head -c 1200000 /dev/urandom | base64 -w 0; echo; echo big-$((2*3))', /big-6/);
      const file = join(dirA, 'recordings', `${id}.cast.gz`);
      await waitFor(() => existsSync(file), 'the recording to be written on A');

      // A peer with its own empty data dir; the recording in progress on A is not found there.
      const dirB = peerDataDir(a.adminToken);
      const b = await startStack({ dataDir: dirB, env });
      started.push(b);
      expect((await b.as(ann).get(`/v1/remote-access/sessions/${id}/recording`)).status).toBe(404);

      const fromA = await closeAndReadRecording(a, ann, id, c);
      expect(fromA.status).toBe(200);
      const record = (await a.as(ann).get(`/v1/remote-access/sessions/${id}`)).body.data.recording;
      expect(record).toMatchObject({ truncated: false, in_progress: false, bytes: Buffer.byteLength(fromA.text), sha256: sha256(fromA.text) });
      expect(record.stored_bytes).toBeGreaterThan(CHUNK_BYTES);
      // The database holds it whole, in chunks; A's file is gone.
      expect(await chunksOf(url, id)).toEqual({ chunks: Math.ceil(record.stored_bytes / CHUNK_BYTES), bytes: record.stored_bytes });
      expect(existsSync(file)).toBe(false);
      const textFromA = await a.as(ann).get(`/v1/remote-access/sessions/${id}/recording?format=text`);
      expect(textFromA.text).toContain('typed-on-a-42');

      await a.stop();
      rmSync(dirA, { recursive: true, force: true });

      const fromB = await b.as(ann).get(`/v1/remote-access/sessions/${id}/recording`);
      expect(fromB.status).toBe(200);
      expect(fromB.headers.get('content-type')).toBe('application/x-asciicast');
      expect(fromB.headers.get('content-disposition')).toBe(`attachment; filename="${id}.cast"`);
      expect(fromB.text).toBe(fromA.text);
      expect(sha256(fromB.text)).toBe(record.sha256);
      const output = parseCastStrict(fromB.text)
        .events.filter((e) => e[1] === 'o')
        .map((e) => e[2])
        .join('');
      expect(output).toBe(c.received().toString('utf8')); // byte for byte what the client saw on A
      expect(output).toContain('big-6');
      const textFromB = await b.as(ann).get(`/v1/remote-access/sessions/${id}/recording?format=text`);
      expect(textFromB.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(textFromB.text).toBe(textFromA.text);
      expect((await b.as(ann).get(`/v1/remote-access/sessions/${id}`)).body.data.recording).toEqual(record);
      const viewed = (await b.admin.get(`/v1/audit/remote-access?session_id=${id}&event=recording.viewed`)).body.data;
      expect(viewed.map((e: { reason: string }) => e.reason)).toEqual(['text', 'cast', 'text', 'cast']);
      expect(readdirSync(dirB)).toEqual(['admin.token']); // B read it from the database, and kept no copy
      await b.stop();

      // Two days on, with a retention of one day: the row goes, and its chunks with it.
      const c2 = await startStack({
        dataDir: peerDataDir(a.adminToken),
        now: () => Date.now() + 2 * DAY_MS,
        env: { ...env, TETHER_RECORDING_RETENTION_DAYS: '1' },
      });
      started.push(c2);
      await waitFor(async () => (await c2.admin.get(`/v1/remote-access/sessions/${id}`)).body.data.recording === null, 'the old recording to go');
      expect(await chunksOf(url, id)).toEqual({ chunks: 0, bytes: 0 });
      expect((await c2.admin.get(`/v1/remote-access/sessions/${id}/recording`)).status).toBe(404);
    } finally {
      for (const s of started) await s.stop();
    }
  });
});
