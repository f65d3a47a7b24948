/**
 * @module `tether deploy logs SERVICE --env ENV [--lines N]`: each replica's recent log lines,
 * each line after its replica's name, as `docker compose logs` prints them. What a container
 * prints is the service's, not ours: on a terminal its escape sequences are removed (`--json`
 * keeps every byte).
 */
import type { ReplicaLogs } from '../../../shared/api/services';
import { stripTerminalEscapes } from '../../../shared/asciicast';
import type { Context } from '../../context';
import { printJson } from '../../output';
import { serviceOrNull, serviceUrl, type EnvFlag } from './service';

export async function deployLogs(ctx: Context, name: string, flags: EnvFlag & { lines?: number; json?: boolean }): Promise<void> {
  const replicas = await ctx.api().request<ReplicaLogs[]>('GET', serviceUrl(name, flags.env, '/logs', flags.lines ? { lines: String(flags.lines) } : {}));
  if (flags.json) return printJson(ctx.out, replicas);
  if (replicas.length === 0) {
    // Why there is nothing: a runtime that runs nothing, or no replica running.
    const s = await serviceOrNull(ctx, name, flags.env);
    return ctx.notice(
      s?.runtime === 'simulated'
        ? `no logs: ${name} in ${flags.env} runs on the simulated runtime, which runs nothing`
        : `no logs: no replica of ${name} in ${flags.env} is running`,
    );
  }
  const width = Math.max(...replicas.map((r) => r.replica.length));
  for (const r of replicas) {
    const prefix = `${r.replica.padEnd(width)} | `;
    const text = r.lines.flatMap((line) => stripTerminalEscapes(line).split('\n'));
    ctx.out.stdout(text.map((line) => `${prefix}${line}\n`).join(''));
  }
}
