/**
 * How the client's failures end a command (docs/cli.md, exit codes): the real commands, run in
 * this process on a commander program, fail with a CliError whose code says what went wrong and
 * decides the exit code (2 for a mistake in the command line, 1 for everything else), and a code
 * the server answered with reaches the caller unchanged.
 */
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createContext } from '../../../cli/context';
import { CliError } from '../../../cli/errors';
import { registerClientCommands } from '../../../cli/index';

let home: string;
let server: Server;
let serverUrl: string;
/** What the fake API answers every request with. */
let answer: { status: number; body: unknown } = { status: 404, body: { error: 'not_found', message: 'no such thing', status: 404 } };
const asked: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    asked.push(`${req.method} ${req.url}`);
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(answer.body));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'tether-cli-errors-'));
  asked.length = 0;
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

/** Runs `tether ARGS` in this process; resolves with the failure it ended with (none: undefined) and what it wrote. */
async function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ failure: CliError | undefined; stderr: string }> {
  let stderr = '';
  const program = new Command('tether').exitOverride();
  const ctx = createContext({ XDG_CONFIG_HOME: home, HOME: home, ...env }, { stdout: () => {}, stderr: (t) => void (stderr += t) });
  registerClientCommands(
    program,
    () => ctx,
    () => {},
  );
  const failure = await program.parseAsync(args, { from: 'user' }).then(
    () => undefined,
    (err: unknown) => {
      if (err instanceof CliError) return err;
      throw err;
    },
  );
  return { failure, stderr };
}

describe('a failing command', () => {
  it('a mistake in the command line is a usage error: exit 2, found before anything is sent', async () => {
    const { failure } = await run(['forward', 'cam-7', 'not-a-forward'], { TETHER_SERVER: serverUrl, TETHER_TOKEN: 'tth_x' });
    expect(failure).toBeInstanceOf(CliError);
    expect(failure!.code).toBe('usage');
    expect(failure!.exitCode).toBe(2);
    expect(failure!.message).toContain('not-a-forward');
    expect(asked).toEqual([]);
  });

  it('no server configured is not_logged_in: exit 1, and the message says how to log in', async () => {
    const { failure } = await run(['device', 'list']);
    expect(failure).toMatchObject({ code: 'not_logged_in', exitCode: 1 });
    expect(failure!.message).toContain('tether login --server URL');
  });

  it("keeps the code the server answered with, which the caller can branch on; the server's refusals exit 1", async () => {
    answer = { status: 404, body: { error: 'not_found', message: 'no device cam-7', status: 404 } };
    const missing = (await run(['device', 'show', 'cam-7'], { TETHER_SERVER: serverUrl, TETHER_TOKEN: 'tth_x' })).failure;
    expect(asked).toEqual(['GET /v1/devices/cam-7']);
    expect(missing).toMatchObject({ code: 'not_found', exitCode: 1 });
    expect(missing!.message).toContain('no device cam-7');

    // The server's bad_request is the server's verdict, not a mistake the client found in its command line.
    answer = { status: 400, body: { error: 'bad_request', message: 'invalid query', status: 400 } };
    expect((await run(['device', 'list'], { TETHER_SERVER: serverUrl, TETHER_TOKEN: 'tth_x' })).failure).toMatchObject({ code: 'bad_request', exitCode: 1 });
  });

  it('a server that cannot be reached is unreachable: exit 1, naming the server', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    const { failure } = await run(['device', 'list'], { TETHER_SERVER: url, TETHER_TOKEN: 'tth_x' });
    expect(failure).toMatchObject({ code: 'unreachable', exitCode: 1 });
    expect(failure!.message).toContain(url);
  });

  it('is an Error whose stack names it, so a trace reads "CliError: …"', async () => {
    const { failure } = await run(['device', 'list']);
    expect(failure).toBeInstanceOf(Error);
    expect(failure!.stack).toMatch(/^CliError: no server known/);
  });
});
