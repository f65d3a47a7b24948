/**
 * The file-transfer protocol end to end: trees that round-trip byte for byte, and every way out
 * of the files root refused with nothing written outside it and nothing partial left behind.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';
import { extractInto, linksLeadingOut, tarOf, tarOfTree, treeDigest } from '../helpers/tar';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let root: string;
let outside: string;
let ids = 1000;

beforeAll(async () => {
  stack = await startStack();
  root = tempDir('tether-root-');
  outside = tempDir('tether-outside-');
  writeFileSync(join(outside, 'secret.txt'), 'do not read');
  symlinkSync(outside, join(root, 'escape')); // a link in the root that leads out
  writeFileSync(join(root, 'plain.txt'), 'plain file\n');
  await stack.onlineDevice('ft-1', { TETHER_FILES_ROOT: root });
});
afterAll(() => stack.stop());
// A failed test must not leave its session open for the next one (one per protocol per device).
afterEach(async () => {
  const open = await stack.admin.get('/v1/remote-access/sessions?status=open&per_page=200');
  for (const s of open.body.data) await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
});

async function openTransfer(deviceId = 'ft-1'): Promise<{ client: StreamClient; sessionId: string }> {
  const res = await stack.admin.post('/v1/remote-access/sessions', { device_id: deviceId, protocol: 'file-transfer' });
  expect(res.status).toBe(201);
  const client = connectStream(res.body.data.websocket_url);
  await client.opened;
  return { client, sessionId: res.body.data.session_id };
}

async function upload(client: StreamClient, path: string, archive: Buffer, chunk = 64 * 1024) {
  const ready = await client.request('upload', { path });
  if (!ready.ok) return ready;
  expect(ready.result).toEqual({ ready: true });
  for (let i = 0; i < archive.length; i += chunk) client.send(archive.subarray(i, i + chunk));
  const id = ids++;
  client.send({ id: ready.id, op: 'end' });
  void id;
  return client.waitForMessage((m) => m.id === ready.id && m !== ready && 'ok' in m, 30_000);
}

async function download(client: StreamClient, path: string) {
  const before = client.received().length;
  const start = await client.request('download', { path });
  if (!start.ok) return { start };
  const done = await client.waitForMessage((m) => m.id === start.id && m.done === true, 30_000);
  return { start, done, archive: client.received().subarray(before) };
}

/** Files and dirs in a directory, recursively, as relative paths. */
function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

describe('file transfer', () => {
  it('a directory tree round-trips byte for byte', async () => {
    const src = join(tempDir(), 'tree');
    mkdirSync(join(src, 'sub', 'deeper'), { recursive: true });
    writeFileSync(join(src, 'big.bin'), randomBytes(3 * 1024 * 1024 + 17));
    writeFileSync(join(src, 'empty'), '');
    writeFileSync(join(src, 'sub', 'notes.txt'), 'nested\n');
    writeFileSync(join(src, 'sub', 'deeper', 'unicode-ファイル.txt'), 'ünïcødé');
    symlinkSync('sub/notes.txt', join(src, 'link-to-notes'));
    const { client, sessionId } = await openTransfer();

    const up = await upload(client, '/incoming', await tarOfTree(src));
    expect(up).toMatchObject({ ok: true, result: { files: 4, bytes: 3 * 1024 * 1024 + 17 + 7 + Buffer.byteLength('ünïcødé') } });
    expect(treeDigest(join(root, 'incoming', 'tree'))).toEqual(treeDigest(src));

    const list = await client.request('list', { path: 'incoming/tree' });
    expect(list.result.entries.map((e: { name: string; type: string }) => [e.name, e.type])).toEqual([
      ['big.bin', 'file'],
      ['empty', 'file'],
      ['link-to-notes', 'symlink'],
      ['sub', 'dir'],
    ]);
    const stat = await client.request('stat', { path: '/incoming/tree/big.bin' });
    expect(stat.result).toMatchObject({ name: 'big.bin', type: 'file', size: 3 * 1024 * 1024 + 17, mtime: expect.any(String) });

    const down = await download(client, 'incoming/tree');
    expect(down.start.result).toEqual({ format: 'tar' });
    expect(down.done).toEqual({ id: down.start.id, done: true, files: 4, bytes: up.result.bytes });
    const dest = tempDir();
    const names = await extractInto(down.archive!, dest);
    expect(names[0]).toBe('tree/');
    expect(treeDigest(join(dest, 'tree'))).toEqual(treeDigest(src));

    // the byte counters saw exactly what went through
    client.ws.close();
    await client.closed;
    const closed = await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
    expect(closed.body.data.bytes_to_device).toBe(client.sentBytes);
    expect(closed.body.data.bytes_from_device).toBe(client.receivedBytes);
  });

  it('downloads a single file under its own name', async () => {
    const { client, sessionId } = await openTransfer();
    const down = await download(client, 'plain.txt');
    expect(down.done).toMatchObject({ files: 1, bytes: 11 });
    const dest = tempDir();
    expect(await extractInto(down.archive!, dest)).toEqual(['plain.txt']);
    expect(readFileSync(join(dest, 'plain.txt'), 'utf8')).toBe('plain file\n');
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('answers not_found, not_a_directory, busy and unknown_op', async () => {
    const { client, sessionId } = await openTransfer();
    expect((await client.request('stat', { path: 'nope' })).error.code).toBe('not_found');
    expect((await client.request('list', { path: 'plain.txt' })).error.code).toBe('not_a_directory');
    expect((await client.request('upload', { path: 'plain.txt' })).error.code).toBe('not_a_directory');
    expect((await client.request('delete', { path: 'plain.txt' })).error.code).toBe('unknown_op');
    expect((await client.request('list', {})).error.code).toBe('bad_params');
    const ready = await client.request('upload', { path: 'busy-test' });
    expect(ready.ok).toBe(true);
    expect((await client.request('list', { path: '/' })).error.code).toBe('busy');
    client.send({ id: ready.id, op: 'end' }); // an empty upload
    await client.waitForMessage((m) => m.id === ready.id && m.result?.files === 0);
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('names the files root and the device in every not_found, not_a_directory and path_outside_root', async () => {
    const { client, sessionId } = await openTransfer();
    const under = `under the files root ${root} of ft-1`;
    const answers = {
      stat: await client.request('stat', { path: '/etc/hostname' }),
      download: await client.request('download', { path: 'srv/app' }),
      list: await client.request('list', { path: 'plain.txt' }),
      upload: await client.request('upload', { path: 'plain.txt/app' }),
      outside: await client.request('list', { path: '../..' }),
      throughLink: await client.request('download', { path: 'escape/secret.txt' }),
    };
    expect(Object.fromEntries(Object.entries(answers).map(([k, r]) => [k, r.error]))).toEqual({
      stat: { code: 'not_found', message: `no such file or directory: /etc/hostname ${under}` },
      download: { code: 'not_found', message: `no such file or directory: srv/app ${under}` },
      list: { code: 'not_a_directory', message: `plain.txt is not a directory ${under}` },
      upload: { code: 'not_a_directory', message: `a path component is not a directory ${under}` },
      outside: { code: 'path_outside_root', message: `../.. is outside the files root ${root} of ft-1` },
      throughLink: { code: 'path_outside_root', message: `escape/secret.txt leads outside the files root ${root} of ft-1` },
    });
    // a refused tar entry, found while the archive arrives, says it too
    const linked = await upload(client, '/', await tarOf([{ header: { name: 'escape/evil.txt' }, content: 'x' }]));
    expect(linked.error).toEqual({ code: 'path_outside_root', message: `escape is a link leading outside the files root ${root} of ft-1` });
    // other codes keep their message as it was
    const ready = await client.request('upload', { path: 'busy-root-test' });
    const busy = await client.request('list', { path: '/' });
    expect(busy.error).toEqual({ code: 'busy', message: `transfer ${ready.id} is in progress; one at a time per stream` });
    client.send({ id: ready.id, op: 'end' });
    await client.waitForMessage((m) => m.id === ready.id && m.result?.files === 0);
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('refuses paths that lead outside the root', async () => {
    const { client, sessionId } = await openTransfer();
    for (const [op, path] of [
      ['download', '../'],
      ['download', '/../../etc/passwd'],
      ['list', '/..'],
      ['stat', 'incoming/../../outside'],
      ['download', 'escape/secret.txt'],
      ['list', 'escape'],
      ['upload', '../evil'],
      ['upload', 'escape'],
    ] as const) {
      const r = await client.request(op, { path });
      expect(r, `${op} ${path}`).toMatchObject({ ok: false, error: { code: 'path_outside_root' } });
    }
    expect(readdirSync(outside)).toEqual(['secret.txt']);
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it.each([
    ['a parent-directory entry', [{ header: { name: '../evil.txt' }, content: 'x' }]],
    ['a nested parent-directory entry', [{ header: { name: 'ok/../../evil.txt' }, content: 'x' }]],
    ['an absolute entry', [{ header: { name: '/tmp/evil.txt' }, content: 'x' }]],
    ['a symlink leading out', [{ header: { name: 'out', type: 'symlink', linkname: '../../../../../../tmp' } }]],
    ['an absolute symlink', [{ header: { name: 'abs', type: 'symlink', linkname: '/etc' } }]],
    ['a file through an existing link that leads out', [{ header: { name: 'escape/evil.txt' }, content: 'x' }]],
    ['a hard link', [{ header: { name: 'hard', type: 'link', linkname: '/etc/passwd' } }]],
  ] as const)('refuses a tar with %s, writing nothing', async (_name, entries) => {
    const { client, sessionId } = await openTransfer();
    const before = listing(root);
    const archive = await tarOf([{ header: { name: 'first.txt' }, content: 'fine' }, ...(entries as unknown as Parameters<typeof tarOf>[0])]);
    const r = await upload(client, '/', archive);
    expect(r).toMatchObject({ ok: false, error: { code: 'path_outside_root' } });
    await waitFor(() => listing(root).join() === before.join(), 'the upload to be rolled back', 5000);
    expect(readdirSync(outside)).toEqual(['secret.txt']);
    expect(existsSync(join(root, 'first.txt'))).toBe(false); // nothing of a refused archive lands
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('refuses links that lead out through links the same archive makes, and lands none of it', async () => {
    const { client, sessionId } = await openTransfer();
    const before = treeDigest(root);
    const leadingOut = linksLeadingOut(root); // the test's own `escape`
    const archive = await tarOf([
      { header: { name: 'ok.txt' }, content: 'fine' },
      { header: { name: 'p/', type: 'directory' } },
      { header: { name: 'p/q', type: 'symlink', linkname: '..' } }, // the root itself: fine on its own
      { header: { name: 'esc', type: 'symlink', linkname: 'p/q/..' } }, // the root's parent
      { header: { name: 'escf', type: 'symlink', linkname: `p/q/../${basename(outside)}/secret.txt` } },
    ]);
    const r = await upload(client, '/', archive);
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: 'path_outside_root',
        message: `symbolic link esc -> p/q/.. climbs back out of p/q, which is a symbolic link under the files root ${root} of ft-1`,
      },
    });
    expect(treeDigest(root)).toEqual(before);
    expect(linksLeadingOut(root)).toEqual(leadingOut);
    expect(readdirSync(outside)).toEqual(['secret.txt']);

    // Links that stay inside land, also those named before what they point at.
    const fine = await upload(
      client,
      'links-ok',
      await tarOf([
        { header: { name: 'current', type: 'symlink', linkname: 'releases/v2' } },
        { header: { name: 'node_modules/.bin/tsc', type: 'symlink', linkname: '../typescript/bin/tsc' } },
        { header: { name: 'node_modules/typescript/bin/tsc' }, content: '#!tsc' },
        { header: { name: 'releases/v2/app' }, content: 'v2' },
      ]),
    );
    expect(fine).toMatchObject({ ok: true, result: { files: 2 } });
    expect(readFileSync(join(root, 'links-ok', 'current', 'app'), 'utf8')).toBe('v2');
    expect(readFileSync(join(root, 'links-ok', 'node_modules', '.bin', 'tsc'), 'utf8')).toBe('#!tsc');
    expect(readlinkSync(join(root, 'links-ok', 'current'))).toBe('releases/v2');
    expect(linksLeadingOut(root)).toEqual(leadingOut);
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('a refused upload leaves the tree exactly as it was, down to the directory made for its target', async () => {
    const { client, sessionId } = await openTransfer();
    const before = treeDigest(root);
    const archive = await tarOf([
      { header: { name: 'sd/', type: 'directory' } },
      { header: { name: 'sd/f.txt' }, content: 'would stay behind' },
      { header: { name: 'sd', type: 'symlink', linkname: 'other' } },
    ]);
    const r = await upload(client, 'pc', archive);
    expect(treeDigest(root)).toEqual(before);
    expect(existsSync(join(root, 'pc'))).toBe(false);
    expect(r).toMatchObject({ ok: false, error: { code: 'exists', message: 'sd exists and is a directory' } });
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('refuses device files and names that are too long', async () => {
    const { client, sessionId } = await openTransfer();
    const dev = await upload(client, '/', await tarOf([{ header: { name: 'null', type: 'character-device', devmajor: 1, devminor: 3 } }]));
    expect(dev.error.code).toBe('bad_params');
    const { client: c2, sessionId: s2 } = { client, sessionId };
    const long = await upload(c2, '/', await tarOf([{ header: { name: `${'a'.repeat(300)}.txt` }, content: 'x' }]));
    expect(long.error.code).toBe('bad_params');
    await stack.admin.del(`/v1/remote-access/sessions/${s2}`);
  });

  it('a transfer cut in the middle leaves no partial file', async () => {
    const { client, sessionId } = await openTransfer();
    const archive = await tarOf([
      { header: { name: 'complete.txt' }, content: 'whole' },
      { header: { name: 'huge.bin' }, content: randomBytes(8 * 1024 * 1024) },
    ]);
    const before = listing(root);
    const ready = await client.request('upload', { path: 'cut' });
    expect(ready.ok).toBe(true);
    const half = archive.subarray(0, 4 * 1024 * 1024);
    for (let i = 0; i < half.length; i += 64 * 1024) client.send(half.subarray(i, i + 64 * 1024));
    // wait until the device has started writing the big file, then pull the plug
    await waitFor(() => existsSync(join(root, 'cut')) && readdirSync(join(root, 'cut')).some((n) => n.endsWith('.part')), 'a part file');
    client.ws.terminate();
    // The upload's own directory goes too (it made it), so the listing below cannot race its removal.
    await waitFor(() => !existsSync(join(root, 'cut')), 'the partial files and their directory to go', 5000);
    expect(listing(root).filter((p) => !before.includes(p) && p !== 'cut')).toEqual([]);
    expect(existsSync(join(root, 'cut', 'complete.txt'))).toBe(false);
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('closing the session aborts a running upload and removes its partial files', async () => {
    const { client, sessionId } = await openTransfer();
    const ready = await client.request('upload', { path: 'aborted' });
    const archive = await tarOf([{ header: { name: 'big.bin' }, content: randomBytes(4 * 1024 * 1024) }]);
    client.send(archive.subarray(0, 1024 * 1024));
    expect(ready.ok).toBe(true);
    await waitFor(() => existsSync(join(root, 'aborted')) && readdirSync(join(root, 'aborted')).length > 0, 'a part file');
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
    expect((await client.closed).code).toBe(4000);
    // the part file goes, and so does the directory the upload created
    await waitFor(() => !existsSync(join(root, 'aborted')), 'the part file and its directory to go', 5000);
  });
});

describe('agent limits', () => {
  it('refuses uploads over the configured size with too_large', async () => {
    const limited = tempDir('tether-limited-');
    await stack.onlineDevice('ft-small', { TETHER_FILES_ROOT: limited, TETHER_MAX_UPLOAD_BYTES: '1000' });
    const { client, sessionId } = await openTransfer('ft-small');
    const r = await upload(client, '/', await tarOf([{ header: { name: 'big.bin' }, content: randomBytes(2000) }]));
    expect(r.error).toEqual({ code: 'too_large', message: expect.stringContaining('1000 bytes') });
    expect(readdirSync(limited)).toEqual([]);
    await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  });

  it('refuses streams beyond the session cap with a clear reason', async () => {
    await stack.onlineDevice('ft-cap', { TETHER_FILES_ROOT: root, TETHER_MAX_SESSIONS: '1' });
    const first = await openTransfer('ft-cap');
    expect((await first.client.request('stat', { path: '/' })).ok).toBe(true);
    const diag = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'ft-cap', protocol: 'diagnostics' })).body.data;
    const refused = connectStream(diag.websocket_url);
    expect(await refused.closed).toEqual({ code: 1011, reason: 'device refused: this device serves at most 1 sessions at once' });
    await stack.admin.del(`/v1/remote-access/sessions/${first.sessionId}`);
    await stack.admin.del(`/v1/remote-access/sessions/${diag.session_id}`);
  });
});
