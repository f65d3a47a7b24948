/**
 * `log.tail` against hostile files and paths, end to end with a real agent: a FIFO or device node
 * must not hold the device's file threads, a reply too big for one frame must not kill the
 * stream, and the answer for a path outside the log dirs must not say whether it exists.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream, type StreamClient } from '../helpers/stream';

/** The agent's reply cap on line text (agent/diagnostics/logs.ts); the frame limit is 4 MiB. */
const REPLY_CAP = 1024 * 1024;
const LINES = 10_000;

let stack: Stack;
let client: StreamClient;
let logDir: string;
let outside: string;
let linkedDir: string;
let realDir: string;
let fifo: string;
let socketServer: Server;
let fifoWriter: number | undefined;

/** 500-byte lines numbered from 1; `fill` pads them (a control character expands 6x in JSON). */
function numberedLines(count: number, fill: string): string[] {
  return Array.from({ length: count }, (_, i) => `${String(i + 1).padStart(6, '0')} `.padEnd(500, fill));
}

beforeAll(async () => {
  stack = await startStack();
  logDir = tempDir('tether-logs-');
  outside = tempDir('tether-outside-');
  writeFileSync(join(logDir, 'app.log'), 'first\nsecond\nthird\n');
  writeFileSync(join(logDir, 'big.log'), numberedLines(LINES, 'a').join('\n') + '\n');
  writeFileSync(join(logDir, 'control.log'), numberedLines(LINES, '\x01').join('\n') + '\n');
  writeFileSync(join(logDir, 'one-long-line.log'), 'older\n' + 'x'.repeat(2 * REPLY_CAP) + 'END\n');
  writeFileSync(join(outside, 'secret.log'), 'secret\n');
  symlinkSync(join(outside, 'secret.log'), join(logDir, 'sneaky.log'));
  fifo = join(logDir, 'pipe.log');
  const made = spawnSync('mkfifo', [fifo]);
  if (made.status !== 0) throw new Error(`mkfifo: ${made.stderr}`);
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(join(logDir, 'socket.log'), resolve));
  symlinkSync('/dev/zero', join(logDir, 'zero.log'));
  symlinkSync('/etc', join(logDir, 'etc-link'));
  symlinkSync(join(outside, 'nope.log'), join(logDir, 'dangling-out.log'));
  symlinkSync(join(logDir, 'gone.log'), join(logDir, 'dangling-in.log'));
  // A configured log dir that is itself a symlink (like /var/log -> /private/var/log).
  realDir = tempDir('tether-real-logs-');
  writeFileSync(join(realDir, 'linked.log'), 'through the link\n');
  const linkParent = tempDir('tether-link-parent-');
  linkedDir = join(linkParent, 'logs');
  symlinkSync(realDir, linkedDir);
  symlinkSync(join(linkedDir, 'linked.log'), join(logDir, 'to-other-dir.log')); // from one log dir into another
  mkdirSync(join(logDir, 'nested'));
  // /dev stands for a log dir holding device nodes: making one (mknod) needs privileges.
  await stack.onlineDevice('hostile-1', { TETHER_LOG_DIRS: `${logDir}:${linkedDir}:/dev`, TETHER_FILES_ROOT: realDir });
});

afterAll(async () => {
  await stack.stop();
  if (fifoWriter !== undefined) closeSync(fifoWriter);
  socketServer.close();
});

let sessionId: string | undefined;

/** A diagnostics stream of its own for each group, so a group that breaks one spares the rest. */
async function freshStream(): Promise<void> {
  if (sessionId) await stack.admin.del(`/v1/remote-access/sessions/${sessionId}`);
  const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'hostile-1', protocol: 'diagnostics' })).body.data;
  sessionId = s.session_id;
  client = connectStream(s.websocket_url);
  await client.opened;
}

/** A request's answer, or a failure naming the close code if the stream closes first. */
async function ask(c: StreamClient, op: string, params: object, timeoutMs = 10_000): Promise<any> {
  const closed = c.closed.then(({ code, reason }) => {
    throw new Error(`the stream closed (${code} ${reason}) instead of answering ${op}`);
  });
  return Promise.race([c.request(op, params, timeoutMs), closed]);
}

describe('log.tail on things that are not regular files', () => {
  beforeAll(freshStream);
  afterAll(() => {
    // Without the fix, agent threads sit in open() on the FIFO until a writer comes: hold one
    // open until the agent stops, so the other groups and the stop are not held up (requests
    // still queued would open it next). O_RDWR on a FIFO never blocks (Linux).
    fifoWriter = openSync(fifo, constants.O_RDWR | constants.O_NONBLOCK);
  });

  it('answers at once for a FIFO, however many, and the device keeps serving file operations', async () => {
    // Four is libuv's whole file thread pool: blocking opens would take every thread.
    const answers = await Promise.all(Array.from({ length: 6 }, () => ask(client, 'log.tail', { path: fifo }, 5000)));
    for (const r of answers) expect(r).toMatchObject({ ok: false, error: { code: 'bad_params', message: expect.stringContaining('not a regular file') } });

    expect((await ask(client, 'log.tail', { path: join(logDir, 'app.log') }, 5000)).result.lines).toEqual(['first', 'second', 'third']);
    expect((await ask(client, 'disk.usage', {}, 5000)).ok).toBe(true); // reads /proc/mounts, statfs
    // Another stream of the same device (file operations of its own) is served too.
    const ft = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'hostile-1', protocol: 'file-transfer' })).body.data;
    const files = connectStream(ft.websocket_url);
    await files.opened;
    expect((await ask(files, 'list', { path: '/' }, 5000)).ok).toBe(true);
    expect((await stack.admin.del(`/v1/remote-access/sessions/${ft.session_id}`)).status).toBe(200);
  });

  it('refuses sockets, directories and device nodes without reading them', async () => {
    for (const path of [join(logDir, 'socket.log'), join(logDir, 'nested'), '/dev/zero', '/dev/urandom', '/dev/null']) {
      const r = await ask(client, 'log.tail', { path }, 5000);
      expect(r, path).toMatchObject({ ok: false, error: { code: 'bad_params', message: `${path} is not a regular file` } });
    }
    // A link to a device: /dev is a log dir here, so it is the device check that refuses it (where
    // /dev is not a log dir, the link leads outside: diagnostics.test.ts).
    expect((await ask(client, 'log.tail', { path: join(logDir, 'zero.log') }, 5000)).error).toEqual({
      code: 'bad_params',
      message: `${join(logDir, 'zero.log')} is not a regular file`,
    });
  });
});

describe('log.tail replies that would not fit in one frame', () => {
  beforeAll(freshStream);
  const expected = numberedLines(LINES, 'a');
  const expectedControl = numberedLines(LINES, '\x01');

  for (const [file, lines] of [
    ['big.log', expected],
    ['control.log', expectedControl],
  ] as const) {
    it(`keeps the newest lines of ${file} within the cap and says so`, async () => {
      const r = await ask(client, 'log.tail', { path: join(logDir, file), lines: LINES });
      expect(r.ok).toBe(true);
      expect(r.result.truncated).toBe(true);
      const got: string[] = r.result.lines;
      expect(got.length).toBeGreaterThan(0);
      expect(got.length).toBeLessThan(LINES);
      expect(got).toEqual(lines.slice(-got.length)); // the newest lines, whole and in order
      expect(Buffer.byteLength(JSON.stringify(got))).toBeLessThanOrEqual(REPLY_CAP);
      // Nearly all of the cap is used: one more line would not have fitted.
      expect(Buffer.byteLength(JSON.stringify(lines.slice(-got.length - 1)))).toBeGreaterThan(REPLY_CAP);
      expect((await ask(client, 'system.info', {})).ok).toBe(true); // the stream lives on
    });
  }

  it('keeps the end of a newest line that alone is over the cap', async () => {
    const r = await ask(client, 'log.tail', { path: join(logDir, 'one-long-line.log'), lines: 2 });
    expect(r.result.truncated).toBe(true);
    expect(r.result.lines).toHaveLength(1);
    expect(r.result.lines[0]).toMatch(/^x+END$/);
    expect(Buffer.byteLength(JSON.stringify(r.result.lines))).toBeLessThanOrEqual(REPLY_CAP);
  });

  it('says truncated: false when everything asked for fits', async () => {
    const r = await ask(client, 'log.tail', { path: join(logDir, 'big.log'), lines: 100 });
    expect(r.result).toMatchObject({ lines: expected.slice(-100), truncated: false });
  });
});

describe('log.tail paths outside the log dirs', () => {
  beforeAll(freshStream);
  it('gives the same answer whether or not they exist', async () => {
    const paths = [
      '/etc/passwd',
      '/etc',
      outside,
      join(outside, 'secret.log'), // exist
      '/etc/nope',
      '/nonexistent/x',
      join(outside, 'nope.log'),
      `${logDir}/../nope.log`, // do not
      join(logDir, 'etc-link', 'passwd'),
      join(logDir, 'etc-link', 'nope'), // through a link leading out
      join(logDir, 'sneaky.log'),
      join(logDir, 'dangling-out.log'), // links leading out, to a file and to nothing
    ];
    const shapes = new Set<string>();
    for (const path of paths) {
      const r = await ask(client, 'log.tail', { path });
      expect(r, path).toMatchObject({ ok: false, error: { code: 'path_outside_root' } });
      const shape = JSON.stringify(r.error).replaceAll(JSON.stringify(path).slice(1, -1), '<path>');
      expect(shape, path).not.toMatch(/exist|no such|not found/i);
      shapes.add(shape);
    }
    expect([...shapes]).toHaveLength(1);
  });

  it('still reads inside a log dir that is a symlink, named either way, and says not_found inside the log dirs', async () => {
    for (const path of [join(linkedDir, 'linked.log'), join(realDir, 'linked.log'), join(logDir, 'to-other-dir.log')]) {
      expect((await ask(client, 'log.tail', { path })).result?.lines, path).toEqual(['through the link']);
    }
    expect((await ask(client, 'log.tail', { path: join(logDir, 'missing.log') })).error.code).toBe('not_found');
    expect((await ask(client, 'log.tail', { path: join(linkedDir, 'missing.log') })).error.code).toBe('not_found');
    expect((await ask(client, 'log.tail', { path: join(logDir, 'dangling-in.log') })).error.code).toBe('not_found');
    expect((await ask(client, 'log.tail', { path: `${logDir}/app.log\0` })).error.code).toBe('bad_params');
  });
});
