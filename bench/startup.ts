/**
 * @module Section 7: how fast the command starts. `tether --version` and `tether --help` beside
 * bare `node -e 0`, the p50 of interleaved runs (a pair per round, so a drifting machine moves
 * both), and the ratio to bare node (target: --version at most 2x).
 */
import { median, round, TETHER, wallMs, type Result } from './lib';

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
