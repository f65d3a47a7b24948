/**
 * The single-file agent (CONTRACT 8): `dist/tether-agent.js` runs with plain `node` from a
 * directory that holds only the bundle and node-pty, comes online and serves a shell.
 */
import { cpSync, existsSync, mkdirSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';

const repo = resolve(__dirname, '../..');
let stack: Stack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(() => stack.stop());

it('runs from a directory holding only the bundle and node-pty', async () => {
  const dir = tempDir('tether-device-');
  cpSync(join(repo, 'dist', 'tether-agent.js'), join(dir, 'tether-agent.js'));
  const pty = join(repo, 'node_modules', 'node-pty');
  const target = join(dir, 'node_modules', 'node-pty');
  mkdirSync(target, { recursive: true });
  for (const part of ['package.json', 'lib', 'build/Release', 'prebuilds']) {
    if (existsSync(join(pty, part))) cpSync(join(pty, part), join(target, part), { recursive: true });
  }
  expect(readdirSync(dir).sort()).toEqual(['node_modules', 'tether-agent.js']);
  expect(readdirSync(join(dir, 'node_modules'))).toEqual(['node-pty']);

  const token = await stack.addDevice('bundled');
  const agent = spawn(process.execPath, ['tether-agent.js', '--server', stack.url, '--device-id', 'bundled'], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TETHER_DEVICE_TOKEN: token, TETHER_STATE_DIR: join(dir, 'state') },
    stdio: 'ignore',
  });
  try {
    await stack.waitForStatus('bundled', 'online');
    const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'bundled', protocol: 'shell' })).body.data;
    const client = connectStream(s.websocket_url);
    await client.opened;
    client.send(Buffer.from('echo bundled-$((40+2))\n'));
    await client.waitForOutput(/bundled-42/);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  } finally {
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
  }
});
