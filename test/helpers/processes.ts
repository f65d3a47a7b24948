/**
 * Child processes of the tests (agents, servers, the CLI), with their output collected line by
 * line. Every process started here is killed when the test file ends, whatever happened.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll } from 'vitest';
import { ESCAPED_ERROR_MSG } from '../../cmd/process-guard';
import { storeEnvFor } from './store';
import { waitFor } from './wait';

export const TETHER_BIN = resolve(__dirname, '../../dist/tether.cjs');

export interface Proc {
  child: ChildProcess;
  pid: number;
  /** stdout and stderr lines so far. */
  stdout: string[];
  stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits for a line of stdout or stderr matching `pattern`. */
  waitForLine(pattern: RegExp, timeoutMs?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL if it lingers; resolves once it is gone. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
/** Agents of this test file keep their state here, never in the home directory. */
let stateDir: string | undefined;
/** Lines where a server or agent process logged an error that escaped every handler. */
const escapes: string[] = [];
afterAll(() => {
  for (const child of live) child.kill('SIGKILL');
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  // The process guard keeps a server up after an escaped error; a test run must not pass over one.
  if (escapes.length > 0) throw new Error(`a process logged an escaped error:\n${escapes.join('\n')}`);
});

const ESCAPE_MARK = `"msg":${JSON.stringify(ESCAPED_ERROR_MSG)}`;

function collect(stream: NodeJS.ReadableStream | null, into: string[]): void {
  let partial = '';
  stream?.setEncoding('utf8');
  stream?.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    into.push(...parts);
    for (const line of parts) if (line.includes(ESCAPE_MARK)) escapes.push(line);
  });
}

export function startProcess(args: string[], env: Record<string, string | undefined> = {}, cwd?: string): Proc {
  const child = spawn(process.execPath, [TETHER_BIN, ...args], {
    env: {
      ...process.env,
      TETHER_SERVER: undefined,
      TETHER_TOKEN: undefined,
      TETHER_STATE_DIR: (stateDir ??= mkdtempSync(join(tmpdir(), 'tether-state-'))),
      ...env,
    },
    cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  live.add(child);
  const stdout: string[] = [];
  const stderr: string[] = [];
  collect(child.stdout, stdout);
  collect(child.stderr, stderr);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once('exit', (code, signal) => {
      live.delete(child);
      done({ code, signal });
    }),
  );
  const proc: Proc = {
    child,
    pid: child.pid!,
    stdout,
    stderr,
    exited,
    waitForLine: (pattern, timeoutMs = 10_000) => waitFor(() => [...stdout, ...stderr].find((l) => pattern.test(l)), `a line matching ${pattern}`, timeoutMs),
    kill: (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  return proc;
}

/**
 * Runs `tether ARGS` to completion: `input` (or nothing) on its standard input, its exit code and
 * its stdout and stderr lines joined.
 */
export async function runTether(args: string[], env: Record<string, string | undefined> = {}, input = '') {
  const proc = startProcess(args, env);
  proc.child.stdin!.end(input);
  const { code } = await proc.exited;
  return { code, stdout: proc.stdout.join('\n'), stderr: proc.stderr.join('\n') };
}

/**
 * How long a server or broker process may take to listen: it migrates a fresh database first
 * (PostgreSQL: fifteen migrations), and a loaded two-core machine took over 10 s.
 */
export const SERVER_START_MS = 30_000;

/** A real `tether server` process on its own data dir; resolves once it listens. */
export async function startServerProcess(dataDir: string, env: Record<string, string> = {}, port = 0) {
  const proc = startProcess(['server'], { TETHER_LISTEN: `127.0.0.1:${port}`, TETHER_DATA_DIR: dataDir, ...(await storeEnvFor(dataDir)), ...env });
  const line = await proc.waitForLine(/^tether listening on /, SERVER_START_MS);
  const url = line.replace('tether listening on ', '');
  return { proc, url, port: Number(new URL(url).port) };
}

/** Process groups of the bundles run by `runBundle`, killed whole when the test file ends. */
const groups = new Set<number>();
afterAll(() => {
  for (const pgid of groups) killGroup(pgid);
});

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // the group is gone already
  }
}

/**
 * Runs one of the `dist/` bundles to completion; its exit code and stdout and stderr together.
 * The bundle (the bench, the soak) starts servers and agents of its own: it runs in a process
 * group of its own, which is killed whole once it exits or the file ends, so a bundle that
 * timed out or crashed leaves none of them behind.
 */
export async function runBundle(bundle: string, args: string[]): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, [resolve(__dirname, '../../dist', bundle), ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  groups.add(child.pid!);
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  killGroup(child.pid!);
  groups.delete(child.pid!);
  return { code, output };
}
