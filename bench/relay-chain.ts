/**
 * @module The honest references of issue 35: raw TCP relays in series, each its own process, in
 * Node (`tcp-relay` in `./tcp-helpers`: `socket.pipe` both ways, the limit of a relay written in
 * Node) or in C (`bench/splice-relay.c`: splice(2) through a pipe, the bytes never in user space:
 * the physical limit). The C relay is compiled at bench time with the system's `cc` into a temp
 * dir; without a compiler its rows say so and nothing is downloaded.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { helper, type RelayListening } from './helpers';
import { stopChild, tempDir } from './lib';

export type RelayKind = 'node' | 'splice';

/** What a chain row says when the C relay cannot be built here. */
export const NO_COMPILER = 'skipped: no C compiler (apt install gcc)';

/** Relays in series: `ports[i]` leads through all of them to `targets[i]`; `pids` entry first. */
export interface RelayChain {
  ports: number[];
  pids: number[];
  stop(): Promise<void>;
}

// bench.cjs runs from dist/; the source stays in bench/.
const SOURCE = resolve(__dirname, '..', 'bench', 'splice-relay.c');
let binary: string | null | undefined;

/** The splice relay's executable, built once per bench run; null when there is no C compiler. */
export function spliceRelayBinary(): string | null {
  if (binary !== undefined) return binary;
  const probe = spawnSync('cc', ['--version'], { stdio: 'ignore' });
  if (probe.error || probe.status !== 0 || !existsSync(SOURCE)) return (binary = null);
  const out = join(tempDir('tether-bench-splice-'), 'splice-relay');
  const built = spawnSync('cc', ['-O2', '-pthread', '-o', out, SOURCE], { encoding: 'utf8' });
  // A compiler that refuses our source is a bug to see, not a reason to skip.
  if (built.status !== 0) throw new Error(`cc ${SOURCE}: ${built.stderr}`);
  return (binary = out);
}

/** One relay process of `kind` in front of `targets`. */
async function oneRelay(kind: RelayKind, targets: number[]): Promise<{ ports: number[]; pid: number; stop(): Promise<void> }> {
  if (kind === 'node') {
    const h = helper(['tcp-relay', ...targets.map(String)]);
    const { ports } = await h.next<RelayListening>();
    return { ports, pid: h.child.pid!, stop: () => h.stop() };
  }
  const exe = spliceRelayBinary();
  if (!exe) throw new Error(NO_COMPILER);
  const child = spawn(exe, targets.map(String), { stdio: ['ignore', 'pipe', 'inherit'] });
  const ports = await new Promise<number[]>((done, fail) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('\n')) done((JSON.parse(out) as RelayListening).ports);
    });
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`splice-relay exited ${code}`)));
  });
  return { ports, pid: child.pid!, stop: () => stopChild(child) };
}

/** `hops` relays of `kind` in series in front of `targets`, started from the far end. */
export async function relayChain(kind: RelayKind, hops: number, targets: number[]): Promise<RelayChain> {
  const relays: Array<Awaited<ReturnType<typeof oneRelay>>> = [];
  const stop = async () => {
    for (const r of relays) await r.stop();
  };
  try {
    let ports = targets;
    for (let i = 0; i < hops; i++) {
      const r = await oneRelay(kind, ports);
      relays.unshift(r);
      ports = r.ports;
    }
    return { ports, pids: relays.map((r) => r.pid), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
