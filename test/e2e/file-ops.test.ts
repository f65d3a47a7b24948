/**
 * The file-transfer ops that change the tree (`remove`, `mkdir`, `rename`) over a real stream to a
 * real agent: what they do on the device's disk, and every way out of the files root refused
 * with nothing outside it touched.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';

let stack: Stack;
let root: string;
let outside: string;
let client: StreamClient;
let sessionId: string;

beforeAll(async () => {
  stack = await startStack();
  root = tempDir('tether-ops-root-');
  outside = tempDir('tether-ops-outside-');
  writeFileSync(join(outside, 'secret.txt'), 'keep me');
  symlinkSync(outside, join(root, 'escape')); // a link in the root that leads out
  await stack.onlineDevice('ops-1', { TETHER_FILES_ROOT: root });
});
afterAll(() => stack.stop());

beforeEach(async () => {
  const res = await stack.admin.post('/v1/remote-access/sessions', { device_id: 'ops-1', protocol: 'file-transfer' });
  expect(res.status).toBe(201);
  sessionId = res.body.data.session_id;
  client = connectStream(res.body.data.websocket_url);
  await client.opened;
});
afterEach(async () => {
  client.ws.close();
  await client.closed;
  await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
});

const codeOf = async (op: string, params: object) => {
  const answer = await client.request(op, params);
  expect(answer.ok, JSON.stringify(answer)).toBe(false);
  return answer.error.code as string;
};

describe('mkdir', () => {
  it('makes one directory and answers its entry; exists, not_found and the root refused', async () => {
    const made = await client.request('mkdir', { path: '/made' });
    expect(made).toMatchObject({ ok: true, result: { name: 'made', type: 'dir', size: 0, mtime: expect.any(String) } });
    expect(lstatSync(join(root, 'made')).isDirectory()).toBe(true);
    expect(await codeOf('mkdir', { path: 'made' })).toBe('exists');
    expect(await codeOf('mkdir', { path: 'no/such/parent' })).toBe('not_found');
    expect(await codeOf('mkdir', { path: '/' })).toBe('bad_params');
    expect(await codeOf('mkdir', { path: 'made', extra: 1 })).toBe('bad_params');
  });

  it('refuses .., an absolute way out and a symbolic link leading out', async () => {
    expect(await codeOf('mkdir', { path: '../x' })).toBe('path_outside_root');
    expect(await codeOf('mkdir', { path: '/../../tmp/x' })).toBe('path_outside_root');
    const viaLink = await client.request('mkdir', { path: 'escape/inside-outside' });
    expect(viaLink.error.code).toBe('path_outside_root');
    expect(viaLink.error.message).toContain(`the files root ${root} of ops-1`);
    expect(existsSync(join(outside, 'inside-outside'))).toBe(false);
  });
});

describe('remove', () => {
  it('removes a file, an empty directory, and a tree only when recursive', async () => {
    writeFileSync(join(root, 'gone.txt'), 'x');
    expect(await client.request('remove', { path: 'gone.txt' })).toMatchObject({ ok: true, result: {} });
    expect(existsSync(join(root, 'gone.txt'))).toBe(false);

    mkdirSync(join(root, 'empty'));
    expect((await client.request('remove', { path: '/empty' })).ok).toBe(true);
    expect(existsSync(join(root, 'empty'))).toBe(false);

    mkdirSync(join(root, 'tree', 'deep', 'er'), { recursive: true });
    writeFileSync(join(root, 'tree', 'deep', 'er', 'f.txt'), 'f');
    symlinkSync(outside, join(root, 'tree', 'out-link')); // inside the tree, leading out
    expect(await codeOf('remove', { path: 'tree' })).toBe('exists');
    expect(existsSync(join(root, 'tree', 'deep', 'er', 'f.txt'))).toBe(true);
    expect((await client.request('remove', { path: 'tree', recursive: true })).ok).toBe(true);
    expect(existsSync(join(root, 'tree'))).toBe(false);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('keep me'); // the link was not followed

    expect(await codeOf('remove', { path: 'tree' })).toBe('not_found');
  });

  it('removes a symbolic link that leads out as a link, and never what it points to', async () => {
    symlinkSync(outside, join(root, 'second-escape'));
    expect((await client.request('remove', { path: 'second-escape', recursive: true })).ok).toBe(true);
    expect(existsSync(join(root, 'second-escape'))).toBe(false);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('keep me');
  });

  it('refuses the root itself, .., absolute ways out and paths through a link leading out', async () => {
    for (const path of ['/', '.', 'a/..', '//']) expect(await codeOf('remove', { path, recursive: true })).toBe('bad_params');
    expect(existsSync(root)).toBe(true);
    expect(await codeOf('remove', { path: '../tether-ops-outside', recursive: true })).toBe('path_outside_root');
    expect(await codeOf('remove', { path: `/../../../..${outside}/secret.txt` })).toBe('path_outside_root');
    expect(await codeOf('remove', { path: 'escape/secret.txt' })).toBe('path_outside_root');
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('keep me');
    expect(readlinkSync(join(root, 'escape'))).toBe(outside);
  });
});

describe('rename', () => {
  it('moves a file and a directory, answering the new entry; a target that exists is refused, not replaced', async () => {
    writeFileSync(join(root, 'a.txt'), 'A');
    writeFileSync(join(root, 'b.txt'), 'B');
    mkdirSync(join(root, 'dir'), { recursive: true });
    const moved = await client.request('rename', { from: 'a.txt', to: '/dir/c.txt' });
    expect(moved).toMatchObject({ ok: true, result: { name: 'c.txt', type: 'file', size: 1 } });
    expect(readFileSync(join(root, 'dir', 'c.txt'), 'utf8')).toBe('A');
    expect(existsSync(join(root, 'a.txt'))).toBe(false);

    expect(await codeOf('rename', { from: 'b.txt', to: 'dir/c.txt' })).toBe('exists');
    expect(readFileSync(join(root, 'dir', 'c.txt'), 'utf8')).toBe('A');
    expect(readFileSync(join(root, 'b.txt'), 'utf8')).toBe('B');

    expect((await client.request('rename', { from: 'dir', to: 'dir2' })).result).toMatchObject({ name: 'dir2', type: 'dir' });
    expect(readFileSync(join(root, 'dir2', 'c.txt'), 'utf8')).toBe('A');
    expect(await codeOf('rename', { from: 'dir2', to: 'dir2/inner' })).toBe('bad_params');
    expect(await codeOf('rename', { from: 'nothing', to: 'x' })).toBe('not_found');
  });

  it('never moves anything out of the root, nor the root itself', async () => {
    writeFileSync(join(root, 'stay.txt'), 'S');
    expect(await codeOf('rename', { from: 'stay.txt', to: '../x' })).toBe('path_outside_root');
    expect(await codeOf('rename', { from: 'stay.txt', to: 'escape/x' })).toBe('path_outside_root');
    expect(await codeOf('rename', { from: 'stay.txt', to: `/../../../..${outside}/x` })).toBe('path_outside_root');
    expect(await codeOf('rename', { from: 'escape/secret.txt', to: 'stolen.txt' })).toBe('path_outside_root');
    expect(await codeOf('rename', { from: '/', to: 'x' })).toBe('bad_params');
    expect(await codeOf('rename', { from: 'stay.txt', to: '/' })).toBe('bad_params');
    expect(readFileSync(join(root, 'stay.txt'), 'utf8')).toBe('S');
    expect(existsSync(join(outside, 'x'))).toBe(false);
    expect(existsSync(join(root, 'stolen.txt'))).toBe(false);

    // A link that leads out moves as a link, inside the root.
    symlinkSync(outside, join(root, 'third-escape'));
    expect((await client.request('rename', { from: 'third-escape', to: 'renamed-link' })).result).toMatchObject({ name: 'renamed-link', type: 'symlink' });
    expect(readlinkSync(join(root, 'renamed-link'))).toBe(outside);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('keep me');
  });
});
