/**
 * Where a `forward --stdio` master listens (cli/commands/forward-socket.ts): a private directory,
 * one master per socket, a dead master's socket replaced, and two masters starting at once ending
 * with one listening — with real Unix sockets and a real process killed to leave a stale socket.
 */
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import type { Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { connectUnix, listenAsMaster, masterPaths } from '../../../../cli/commands/forward-socket';
import { tempDir } from '../../../helpers/temp';
import { waitFor } from '../../../helpers/wait';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

const pathsIn = (config: string, device = 'dev-1') => masterPaths({ XDG_CONFIG_HOME: config }, 'http://127.0.0.1:1', 'tth_token', device);

async function listen(paths: ReturnType<typeof pathsIn>): Promise<Server | undefined> {
  const server = await listenAsMaster(paths, (s) => {
    s.on('error', () => {}); // the liveness checks of other masters hang up at once
    s.end('hi\n');
  });
  if (server) servers.push(server);
  return server;
}

describe('forward --stdio master socket', () => {
  it('lives in a private directory, one socket per server, token and device', () => {
    const config = tempDir();
    const a = pathsIn(config);
    expect(a.dir).toBe(`${config}/tether/run`);
    expect(statSync(a.dir).mode & 0o777).toBe(0o700);
    expect(a.socket).toMatch(/\/[0-9a-f]{20}\.sock$/);
    expect(Buffer.byteLength(a.socket)).toBeLessThan(104);
    expect(pathsIn(config, 'dev-2').socket).not.toBe(a.socket);
    expect(masterPaths({ XDG_CONFIG_HOME: config }, 'http://127.0.0.1:1', 'tth_other', 'dev-1').socket).not.toBe(a.socket);
  });

  it('prefers XDG_RUNTIME_DIR, and a short path when the config dir is too deep', () => {
    const runtime = tempDir();
    expect(masterPaths({ XDG_RUNTIME_DIR: runtime, XDG_CONFIG_HOME: tempDir() }, 's', 't', 'd').dir).toBe(`${runtime}/tether`);
    const deep = `${tempDir()}/${'x'.repeat(90)}`;
    expect(masterPaths({ XDG_CONFIG_HOME: deep }, 's', 't', 'd').dir).not.toContain(deep);
  });

  it('lets one master listen; a second one sees it and leaves', async () => {
    const paths = pathsIn(tempDir());
    expect(await listen(paths)).toBeDefined();
    expect(await listen(paths)).toBeUndefined();
    const client = await connectUnix(paths.socket);
    const said = await new Promise<string>((resolve) => client.once('data', (d: Buffer) => resolve(d.toString())));
    expect(said).toBe('hi\n');
    client.destroy();
  });

  it("replaces a dead master's socket, and of two starting at once exactly one listens", async () => {
    const paths = pathsIn(tempDir());
    // A process that listens there and is killed: its socket file stays, and nobody answers.
    const dead = spawn(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(paths.socket)}, () => console.log('up'))`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    await new Promise((resolve) => dead.stdout.once('data', resolve));
    dead.kill('SIGKILL');
    await new Promise((resolve) => dead.once('exit', resolve));
    expect(existsSync(paths.socket)).toBe(true);
    await expect(connectUnix(paths.socket)).rejects.toMatchObject({ code: 'ECONNREFUSED' });

    const both = await Promise.all([listen(paths), listen(paths), listen(paths)]);
    expect(both.filter(Boolean)).toHaveLength(1);
    const client = await connectUnix(paths.socket);
    client.destroy();
    expect(existsSync(paths.lock)).toBe(false);
  });

  it('takes over the socket once the master before it closed', async () => {
    const paths = pathsIn(tempDir());
    const first = (await listen(paths))!;
    await new Promise((resolve) => first.close(resolve));
    await waitFor(() => !existsSync(paths.socket), 'the socket file to go');
    expect(await listen(paths)).toBeDefined();
  });
});
