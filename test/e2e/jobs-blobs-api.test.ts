/**
 * Blobs over HTTP (CONTRACT 10.2) on a real server: an upload streamed with its size and SHA-256,
 * for administrators only; more than 256 MiB refused (413), declared or streamed, keeping nothing;
 * and the agents' route, which serves a blob only to a device proven by its token (401 otherwise)
 * while a file-push of that blob runs on it (404 otherwise).
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JOB_LIMITS } from '../../shared/api/jobs';
import { openStore, type Store } from '../../api/store/index';
import { client } from '../helpers/http';
import { checkResponse } from '../helpers/openapi';
import { startStack, type Stack } from '../helpers/stack';
import { storeEnvFor } from '../helpers/store';

let stack: Stack;
/** A second connection to the server's database, for what only the dispatcher does (an execution starting). */
let db: Store;
let peToken: string;
const agentTokens: Record<string, string> = {};

beforeAll(async () => {
  stack = await startStack();
  const url = (await storeEnvFor(stack.dataDir)).TETHER_DATABASE_URL;
  db = await openStore(url === undefined ? stack.dataDir : { dataDir: stack.dataDir, databaseUrl: url });
  for (const id of ['jd-1', 'jd-4']) agentTokens[id] = await stack.addDevice(id);
  peToken = await stack.userToken('jpe', 'platform-engineer');
});
afterAll(async () => {
  await db?.close();
  await stack?.stop();
});

/** Posts a body from a generator, as a client that streams (no Content-Length). */
async function streamed(path: string, token: string, source: AsyncIterable<Uint8Array>, headers: Record<string, string> = {}) {
  const res = await fetch(`${stack.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', ...headers },
    body: ReadableStream.from(source),
    duplex: 'half',
  } as RequestInit);
  const text = await res.text();
  checkResponse({ method: 'POST', path, status: res.status, headers: res.headers, text });
  return { status: res.status, body: JSON.parse(text) as { data?: { blob_id: string; size: number; sha256: string }; error?: string } };
}

async function* bytes(total: number, piece = 256 * 1024): AsyncGenerator<Uint8Array> {
  const block = randomBytes(piece);
  for (let sent = 0; sent < total; sent += piece) yield block.subarray(0, Math.min(piece, total - sent));
}

describe('blobs', () => {
  it('stores an upload with its size and SHA-256, for administrators only', async () => {
    const data = randomBytes(3 * 1024 * 1024 + 99);
    const res = await streamed(
      '/v1/blobs',
      stack.adminToken,
      (async function* () {
        for (let i = 0; i < data.length; i += 100_000) yield data.subarray(i, i + 100_000);
      })(),
    );
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ size: data.length, sha256: createHash('sha256').update(data).digest('hex'), created_by: 'admin' });
    const meta = await stack.admin.get(`/v1/blobs/${res.body.data!.blob_id}`);
    expect(meta.body.data).toEqual((res.body as { data: unknown }).data);
    expect((await stack.admin.get('/v1/blobs/blob_nothere')).status).toBe(404);
    expect((await stack.as(peToken).raw('POST', '/v1/blobs', 'x', { 'content-type': 'application/octet-stream' })).status).toBe(403);
    expect((await stack.as(peToken).get(`/v1/blobs/${res.body.data!.blob_id}`)).status).toBe(403);
    const json = await stack.admin.post('/v1/blobs', { not: 'a file' });
    expect(json.status).toBe(415);
  });

  it('refuses more than 256 MiB (413), declared or streamed, and keeps nothing', async () => {
    const before = await db.db.selectFrom('blobs').select('blob_id').execute();
    const declared = await fetch(`${stack.url}/v1/blobs`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.adminToken}`,
        'content-type': 'application/octet-stream',
        'content-length': String(JOB_LIMITS.maxBlobBytes + 1),
      },
      body: ReadableStream.from(bytes(1024)),
      duplex: 'half',
    } as RequestInit).catch((err: Error) => err);
    // The server answers before the body: the client may see the 413 or the connection closing.
    if (!(declared instanceof Error)) expect(declared.status).toBe(413);
    const res = await streamed('/v1/blobs', stack.adminToken, bytes(JOB_LIMITS.maxBlobBytes + 1, 1024 * 1024));
    expect(res.status).toBe(413);
    expect(res.body.error).toBe('payload_too_large');
    // Deleted before the answer: nothing of it is left.
    expect(
      await db.db
        .selectFrom('blob_chunks')
        .select('seq')
        .where('blob_id', 'not in', [...before.map((b) => b.blob_id), 'none'])
        .execute(),
    ).toEqual([]);
    expect(await db.db.selectFrom('blobs').select('blob_id').execute()).toEqual(before);
  }, 120_000);

  it('serves a blob to an agent only while a file-push of it runs on its device', async () => {
    const data = randomBytes(1024 * 1024 + 5);
    const blob = (
      await streamed(
        '/v1/blobs',
        stack.adminToken,
        (async function* () {
          yield data;
        })(),
      )
    ).body.data!;
    const job = await stack.admin.post('/v1/jobs', { kind: 'file-push', target: { device_ids: ['jd-4'] }, blob_id: blob.blob_id, path: 'x.bin' });
    const fetchAs = (device: string | undefined, token: string | undefined) => {
      const headers: Record<string, string> = {};
      if (device) headers['x-tether-device-id'] = device;
      if (token) headers.authorization = `Bearer ${token}`;
      return client(stack.url).get(`/v1/agent/blobs/${blob.blob_id}`, headers);
    };
    expect((await fetchAs('jd-4', undefined)).status).toBe(401);
    expect((await fetchAs(undefined, agentTokens['jd-4'])).status).toBe(401);
    expect((await fetchAs('jd-4', agentTokens['jd-1'])).status).toBe(401);
    expect((await fetchAs('jd-4', stack.adminToken)).status).toBe(401);
    // Queued, not running: not yet.
    expect((await fetchAs('jd-4', agentTokens['jd-4'])).status).toBe(404);
    // What the dispatcher does when it starts the execution on the device's agent.
    await db.db
      .updateTable('job_executions')
      .set({ status: 'in_progress', attempt: 1, started_at: new Date().toISOString(), deadline_at: new Date(Date.now() + 3_600_000).toISOString() })
      .where('job_id', '=', job.body.data.job_id)
      .execute();
    const res = await fetch(`${stack.url}/v1/agent/blobs/${blob.blob_id}`, {
      headers: { 'x-tether-device-id': 'jd-4', authorization: `Bearer ${agentTokens['jd-4']}` },
    });
    const body = Buffer.from(await res.arrayBuffer());
    checkResponse({ method: 'GET', path: `/v1/agent/blobs/${blob.blob_id}`, status: res.status, headers: res.headers, text: '' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/octet-stream');
    expect(res.headers.get('content-length')).toBe(String(data.length));
    expect(body.equals(data)).toBe(true);
    // Another device, even one with its own token, gets nothing.
    expect((await fetchAs('jd-1', agentTokens['jd-1'])).status).toBe(404);
    expect(
      (await client(stack.url).get('/v1/agent/blobs/blob_nothere', { 'x-tether-device-id': 'jd-4', authorization: `Bearer ${agentTokens['jd-4']}` })).status,
    ).toBe(404);
  });
});
