/**
 * The `file-push` job kind's fetch-and-write with real files: atomic write with its mode, checksum
 * and size checks that leave the target untouched, paths confined to the files root, fetch
 * failures. The blob comes from a node:http server in the test that serves bytes as the API's
 * `GET /v1/agent/blobs/{id}` does (the end-to-end test fetches it from the real API).
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig, serverUrls } from '../../../agent/config';
import { openUploadJournal } from '../../../agent/file-transfer/upload-journal';
import { blobUrlOn } from '../../../agent/jobs/blob-fetch';
import type { JobContext } from '../../../agent/jobs/outcome';
import { runWork } from '../../../agent/jobs/run-work';
import { silentLogger } from '../../../shared/log';
import { tempDir } from '../../helpers/temp';
import { waitFor } from '../../helpers/wait';

const blobs = new Map<string, Buffer>();
const seen: IncomingHttpHeaders[] = [];
/** Blobs whose answer stops after half its bytes and stays open. */
const stalled = new Set<string>();
const hanging: ServerResponse[] = [];
const server = createServer(function serveBlob(req, res): void {
  seen.push(req.headers);
  const id = /^\/prefix\/v1\/agent\/blobs\/([^/]+)$/.exec(req.url ?? '')?.[1];
  const bytes = id === undefined ? undefined : blobs.get(id);
  if (!bytes || req.headers.authorization !== 'Bearer tok' || req.headers['x-tether-device-id'] !== 'dev-push') {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': bytes.length });
  if (!stalled.has(id!)) {
    res.end(bytes);
    return;
  }
  res.write(bytes.subarray(0, bytes.length / 2));
  hanging.push(res);
});
let base = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prefix`;
});
afterAll(async () => {
  for (const res of hanging) res.destroy();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const filesRoot = tempDir('tether-jobs-push-');
const stateDir = tempDir();
const outside = tempDir('tether-jobs-outside-');
const config = () => loadAgentConfig({ server: base, deviceId: 'dev-push', token: 'tok', filesRoot, stateDir }, {});
function ctx(signal = new AbortController().signal, journal?: JobContext['journal']): JobContext {
  const c = config();
  return { config: c, log: silentLogger, signal, blobUrl: (id) => blobUrlOn(c.servers[0]!, id), journal };
}
function blob(bytes: Buffer): { blob_id: string; size: number; sha256: string } {
  const blob_id = `blob_${randomBytes(6).toString('hex')}`;
  blobs.set(blob_id, bytes);
  return { blob_id, size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}
const push = (b: ReturnType<typeof blob>, path: string, mode = '0644', c = ctx()) => runWork({ kind: 'file-push', ...b, path, mode }, c);
const tempFiles = (dir: string) => readdirSync(dir).filter((n) => n.includes('.tether-'));

describe('file-push jobs', () => {
  it('fetches with the device token from the server the agent is connected to (path prefix kept)', () => {
    expect(blobUrlOn(serverUrls('https://relay.example/base/'), 'blob_1')).toBe('https://relay.example/base/v1/agent/blobs/blob_1');
    expect(blobUrlOn(serverUrls('ws://127.0.0.1:8080'), 'blob_2')).toBe('http://127.0.0.1:8080/v1/agent/blobs/blob_2');
  });

  it('writes the blob byte for byte with its mode, creating missing directories, and replaces a file atomically', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    expect(await push(blob(bytes), 'etc/app/cert.pem', '0640')).toEqual({ status: 'succeeded' });
    const target = join(filesRoot, 'etc/app/cert.pem');
    expect(readFileSync(target).equals(bytes)).toBe(true);
    expect(statSync(target).mode & 0o777).toBe(0o640);
    expect(seen.at(-1)).toMatchObject({ authorization: 'Bearer tok', 'x-tether-device-id': 'dev-push' });

    const before = statSync(target).ino;
    const next = Buffer.from('second version\n');
    expect(await push(blob(next), 'etc/app/cert.pem', '755')).toEqual({ status: 'succeeded' });
    expect(readFileSync(target, 'utf8')).toBe('second version\n');
    expect(statSync(target).mode & 0o777).toBe(0o755);
    expect(statSync(target).ino).not.toBe(before); // renamed over, never rewritten in place
    expect(tempFiles(join(filesRoot, 'etc/app'))).toEqual([]);
  });

  it('a checksum or size mismatch fails checksum_mismatch, leaves the target untouched and removes what it created', async () => {
    writeFileSync(join(filesRoot, 'keep.txt'), 'original');
    const wrongDigest = { ...blob(Buffer.from('new content')), sha256: 'f'.repeat(64) };
    expect(await push(wrongDigest, 'keep.txt')).toMatchObject({ status: 'failed', error: { code: 'checksum_mismatch' } });
    const tooLong = { ...blob(Buffer.from('new content')), size: 3 };
    expect(await push(tooLong, 'keep.txt')).toMatchObject({
      status: 'failed',
      error: { code: 'checksum_mismatch', message: expect.stringContaining('more than the 3 bytes') },
    });
    const tooShort = { ...blob(Buffer.from('new content')), size: 400 };
    expect(await push(tooShort, 'new-dir/deeper/file')).toMatchObject({ status: 'failed', error: { code: 'checksum_mismatch' } });
    expect(readFileSync(join(filesRoot, 'keep.txt'), 'utf8')).toBe('original');
    expect(tempFiles(filesRoot)).toEqual([]);
    expect(existsSync(join(filesRoot, 'new-dir'))).toBe(false);
  });

  it('refuses paths that leave the files root, by .. or by a link, and writes nothing outside', async () => {
    const b = blob(Buffer.from('x'));
    symlinkSync(outside, join(filesRoot, 'escape'));
    for (const path of ['../evil', 'a/../../evil', 'escape/evil']) {
      const outcome = await push(b, path);
      expect(outcome, path).toMatchObject({
        status: 'failed',
        error: { code: 'path_outside_root', message: expect.stringContaining(`the files root ${filesRoot} of dev-push`) },
      });
    }
    expect(readdirSync(outside)).toEqual([]);
    mkdirSync(join(filesRoot, 'a-dir'));
    expect(await push(b, 'a-dir')).toMatchObject({ status: 'failed', error: { code: 'exists' } });
  });

  it('answers blob_unavailable for a blob the server does not serve this device, or a server that is down', async () => {
    const gone = { blob_id: 'blob_missing', size: 1, sha256: '0'.repeat(64) };
    expect(await push(gone, 'nope')).toMatchObject({ status: 'failed', error: { code: 'blob_unavailable', message: expect.stringContaining('404') } });
    const down: JobContext = { ...ctx(), blobUrl: () => 'http://127.0.0.1:9/v1/agent/blobs/blob_x' };
    expect(await push(blob(Buffer.from('y')), 'nope', '0644', down)).toMatchObject({ status: 'failed', error: { code: 'blob_unavailable' } });
    expect(existsSync(join(filesRoot, 'nope'))).toBe(false);
  });

  it('journals its temporary file, so an agent killed mid-push removes it when it starts again; a canceled push removes it itself', async () => {
    const journal = openUploadJournal(stateDir, 'dev-push', silentLogger);
    const b = blob(randomBytes(64 * 1024));
    stalled.add(b.blob_id);
    const controller = new AbortController();
    const pushing = push(
      b,
      'slow/file.bin',
      '0644',
      ctx(controller.signal, () => journal.begin()),
    );
    const dir = join(filesRoot, 'slow');
    await waitFor(() => existsSync(dir) && tempFiles(dir).length === 1, 'the temporary file');
    // What a restarted agent does first: undo what unfinished pushes left.
    openUploadJournal(stateDir, 'dev-push', silentLogger).close();
    expect(existsSync(dir) ? tempFiles(dir) : []).toEqual([]);
    controller.abort();
    expect(await pushing).toMatchObject({ status: 'failed' });
    expect(existsSync(join(dir, 'file.bin'))).toBe(false);
    journal.close();
  });
});
