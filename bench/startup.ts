/**
 * @module Section 7: how fast the command starts. `tether --version` and `tether --help` beside
 * bare `node -e 0`, the p50 of interleaved runs (a pair per round, so a drifting machine moves
 * both), and the ratio to bare node (target: --version at most 2x). And (issue 35, run by the
 * transfer section, which has a device) `tether cp` of a 3-byte file as an installed `tether`
 * runs it: `node` and the file package.json's `bin` names, not `npx`.
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { median, round, run, TETHER, wallMs, type Result } from './lib';

const nodeMs = (args: string[]) => wallMs(process.execPath, args);

export function startupBench(rounds: number): Result[] {
  const times: Record<'node' | 'version' | 'help', number[]> = { node: [], version: [], help: [] };
  nodeMs(['-e', '0']); // warm the file cache
  nodeMs([TETHER, '--version']);
  for (let i = 0; i < rounds; i++) {
    times.node.push(nodeMs(['-e', '0']));
    times.version.push(nodeMs([TETHER, '--version']));
    times.help.push(nodeMs([TETHER, '--help']));
  }
  const node = median(times.node);
  const version = median(times.version);
  const help = median(times.help);
  return [
    { section: 'startup', name: 'bare node -e 0 p50', value: round(node), unit: 'ms', target: '-', met: null },
    { section: 'startup', name: 'tether --version p50', value: round(version), unit: 'ms', target: '<= 2x bare node', met: version <= 2 * node },
    { section: 'startup', name: 'tether --version / bare node', value: round(version / node, 2), unit: 'x', target: '<= 2', met: version <= 2 * node },
    { section: 'startup', name: 'tether --help p50', value: round(help), unit: 'ms', target: '-', met: null },
  ];
}

/** The `tether` command as installed: the file package.json's `bin` names (bench.cjs runs from dist/). */
export function installedBin(): string {
  const root = resolve(__dirname, '..');
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: { tether: string } };
  return resolve(root, pkg.bin.tether);
}

/**
 * `tether cp` of the 3-byte file `remote` (device:path) into `localDir`, `rounds` times, each
 * round beside a bare `node -e 0`: the p50 of the whole command, wall time.
 */
export async function installedCopyBench(env: Record<string, string>, remote: string, localDir: string, rounds: number): Promise<Result[]> {
  const bin = installedBin();
  const timed = async (args: string[], e: Record<string, string> = {}) => {
    const t0 = performance.now();
    await run(process.execPath, args, e);
    return performance.now() - t0;
  };
  const copy = () => timed([bin, 'cp', '--no-progress', remote, join(localDir, `small-${Math.random().toString(36).slice(2)}`)], env);
  await copy(); // the file cache, and the device's first file session
  const times: Record<'node' | 'cp', number[]> = { node: [], cp: [] };
  for (let i = 0; i < rounds; i++) {
    times.node.push(await timed(['-e', '0']));
    times.cp.push(await copy());
  }
  const node = median(times.node);
  const cp = median(times.cp);
  return [
    {
      section: 'startup',
      name: `tether cp of a 3-byte file, installed (node ${bin.split('/').slice(-2).join('/')}), p50 of ${rounds}`,
      value: round(cp),
      unit: 'ms',
      target: 'reported',
      met: null,
    },
    { section: 'startup', name: 'bare node -e 0 p50, same rounds', value: round(node), unit: 'ms', target: '-', met: null },
    { section: 'startup', name: 'tether cp of a 3-byte file / bare node', value: round(cp / node, 2), unit: 'x', target: 'reported', met: null },
  ];
}
