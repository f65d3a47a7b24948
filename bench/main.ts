/**
 * @module `npm run bench`: starts a real `tether server` and real agents on 127.0.0.1, measures
 * transfers (beside bare WebSocket processes and OpenSSH, direct and through a jump host), server
 * CPU per GiB, keystroke echo, time to shell, port forwarding (beside `ssh -L` and `ssh -J -L`), what recording costs, how fast the web console paints, agent capacity, memory at idle and under transfer, API
 * throughput and the command's start-up (and, with `--only=deploy` only, the docker deployment runtime:
 * apply to ready, the ingress beside a container reached directly, a rolling update under load; with `--only=peers` only,
 * peers on PostgreSQL beside one process on SQLite; with `--only=jobs` only, a job over 10,000 light agents and a paced one), prints one table with each figure beside its target, and writes
 * bench/results.json. `--quick` runs a tiny version (a few MiB, a few samples) for the tests.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, resolve } from 'node:path';
import { apiBench } from './api';
import { capacityBench } from './capacity';
import { clusterBench } from './cluster';
import { consoleBench } from './console';
import { forwardBench } from './forward';
import { recordingBench } from './recording';
import { echoBench } from './echo';
import { timeToShellBench } from './latency';
import { printTable, startAgent, startServer, tempDir, type Result } from './lib';
import { allowSshdInstall } from './sshd';
import { startupBench } from './startup';
import { transferBench } from './transfer';

const quick = process.argv.includes('--quick');
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const out = process.argv.find((a) => a.startsWith('--out='))?.slice(6) ?? resolve(__dirname, '..', 'bench', 'results.json');

const MiB = 1024 * 1024;
const agentsArg = Number(process.argv.find((a) => a.startsWith('--agents='))?.slice(9));
// `--cluster-agents=0`: the copies only; `--cluster-repeats=N`: that many copies of each kind.
const clusterAgentsArg = Number(process.argv.find((a) => a.startsWith('--cluster-agents='))?.slice(17));
const clusterRepeatsArg = Number(process.argv.find((a) => a.startsWith('--cluster-repeats='))?.slice(18));
const jobAgentsArg = Number(process.argv.find((a) => a.startsWith('--job-agents='))?.slice(13));
// As many agents as one process's open-files limit allows, less room for the server's own files.
const defaultAgents = Math.max(15_000, Math.min(19_000, fdLimit() - 1000));
const plan = quick
  ? {
      bytes: 8 * MiB,
      repeats: 1,
      settleSeconds: 1,
      echoSamples: 200,
      pingSamples: 200,
      shellOutput: 1 * MiB,
      shells: 5,
      agents: 50,
      idleSeconds: 1,
      apiSeconds: 1,
    }
  : {
      bytes: 1024 * MiB,
      repeats: 3,
      // V8 shrinks a new process's young generation some 5-10 s after start: idle is after that.
      settleSeconds: 15,
      echoSamples: 10_000,
      pingSamples: 5_000,
      shellOutput: 64 * MiB,
      shells: 50,
      agents: agentsArg || defaultAgents,
      idleSeconds: 60,
      apiSeconds: 10,
    };

/** The soft open-files limit of this process (children inherit it). */
function fdLimit(): number {
  try {
    const limits = readFileSync('/proc/self/limits', 'utf8');
    return Number(/^Max open files\s+(\d+)/m.exec(limits)?.[1] ?? 16_000);
  } catch {
    return 16_000;
  }
}

const wanted = (section: string) => !only || only.includes(section);

async function main(): Promise<void> {
  const results: Result[] = [];
  if (!quick) allowSshdInstall();
  if (wanted('startup')) results.push(...startupBench(quick ? 3 : 30));
  const server = await startServer();
  try {
    if (wanted('transfer')) results.push(...(await transferBench(server, plan.bytes, plan.repeats, plan.settleSeconds)));
    if (wanted('echo')) results.push(...(await echoBench(server, plan.echoSamples)));
    if (wanted('shell')) results.push(...(await timeToShellBench(server, plan.shells)));
    if (wanted('console')) results.push(...(await consoleBench(server, quick)));
    if (wanted('recording')) results.push(...(await recordingBench(server, plan.echoSamples, plan.shellOutput)));
    if (wanted('forward')) results.push(...(await forwardBench(server, plan.bytes, plan.repeats, plan.pingSamples, quick)));
    if (wanted('api')) {
      const agent = await startAgent(server, 'bench-api', tempDir('tether-bench-api-'));
      try {
        results.push(...(await apiBench(server, plan.apiSeconds, 'bench-api')));
      } finally {
        await agent.stop();
      }
    }
  } finally {
    await server.stop();
  }
  if (wanted('agents')) {
    // A fresh server: the capacity figure should not carry the other sections' state.
    const fresh = await startServer();
    try {
      results.push(...(await capacityBench(fresh, plan.agents, plan.idleSeconds)));
    } finally {
      await fresh.stop();
    }
  }
  if (wanted('cluster')) {
    // Nodes of their own, after everything else: 50,000 agents take the machine.
    results.push(
      ...(await clusterBench(
        quick
          ? { agents: 60, killed: 20, bytes: 8 * MiB, repeats: 1, heartbeatMs: 1_000 }
          : {
              agents: Number.isNaN(clusterAgentsArg) ? 50_000 : clusterAgentsArg,
              killed: Number.isNaN(clusterAgentsArg) ? 15_000 : Math.round(clusterAgentsArg * 0.3),
              bytes: 1024 * MiB,
              repeats: Number.isNaN(clusterRepeatsArg) ? 3 : clusterRepeatsArg,
              heartbeatMs: 20_000,
            },
      )),
    );
  }
  // Only when asked for by name (`--only=deploy`): it runs a dockerd of its own, which needs root
  // and the Docker packages, and takes the machine for a while (50 containers).
  if (only?.includes('deploy')) {
    const { deployBench } = await import('./deploy');
    results.push(...(await deployBench(quick ? { replicas: [1, 10], loadSeconds: 2, clients: 4 } : { replicas: [1, 10, 50], loadSeconds: 5, clients: 4 })));
  }
  // Only when asked for by name (`--only=peers`): PostgreSQL, NATS and four servers of its own.
  if (only?.includes('peers')) {
    const { peersBench } = await import('./peers');
    const full = { seconds: 3, rounds: 3, clients: 32, devices: 20, users: 800, agents: 1500, pinned: 200 };
    results.push(...(await peersBench(quick ? { seconds: 1, rounds: 1, clients: 8, devices: 6, users: 200, agents: 60, pinned: 10 } : full)));
  }
  // Only by name (`--only=jobs`): 10,000 light agents and a server of its own (`--job-agents=N`
  // to choose; `--jobs-cpu-prof=DIR` writes the server's CPU profile there).
  if (only?.includes('jobs')) {
    const { jobsBench } = await import('./jobs');
    const cpuProfDir = process.argv.find((a) => a.startsWith('--jobs-cpu-prof='))?.slice(16);
    results.push(...(await jobsBench({ agents: quick ? 50 : jobAgentsArg || 10_000, paced: quick ? 6 : 40, perMinute: 120, cpuProfDir })));
  }
  // Only by name (`--only=agent-package`): it needs `npm run package` first.
  if (only?.includes('agent-package')) results.push(...(await (await import('./agent-package')).agentPackageBench(quick)));
  printTable(results);
  const misses = results.filter((r) => r.met === false).length;
  console.log(`\n${results.length} figures, ${misses} target${misses === 1 ? '' : 's'} missed${quick ? ' (quick run: figures are not comparable)' : ''}`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify({ at: new Date().toISOString(), quick, machine: { cpus: cpus().length, memory_bytes: totalmem(), node: process.version }, results }, null, 2)}\n`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
