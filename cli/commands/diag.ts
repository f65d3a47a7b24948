/**
 * @module `tether diag DEVICE [OP]`: a readable summary of the device (system, disks,
 * interfaces, top processes), or one diagnostics operation; `--json` prints the results as data.
 */
import type { DiagnosticOp, DiagnosticResults } from '../../shared/protocol/diagnostics';
import type { Context } from '../context';
import { checkDiagArgs, SUMMARY_OPS } from '../diag-ops';
import { formatBytes, formatDuration, printJson, table } from '../output';
import { withSessionStream } from '../sessions';

export interface DiagFlags {
  json?: boolean;
  path?: string;
  lines?: number;
  limit?: number;
  replace?: boolean;
  waitOnline?: boolean;
}

function paramsFor(op: string, flags: DiagFlags): Record<string, unknown> {
  if (op === 'log.tail') return { ...(flags.path ? { path: flags.path } : {}), ...(flags.lines ? { lines: flags.lines } : {}) };
  if (op === 'process.list') return { limit: flags.limit ?? 10 };
  return {};
}

/** Human-readable text for the results of the summary ops and of single ops. */
export function describe(results: Partial<DiagnosticResults>): string {
  const parts: string[] = [];
  const info = results['system.info'];
  if (info) {
    parts.push(
      `${info.hostname}: ${info.os}, ${info.kernel}, ${info.arch}, ${info.cpus.count} CPU (${info.cpus.model}), ` +
        `up ${formatDuration(info.uptime_s)}, agent ${info.agent_version}\n`,
    );
  }
  const m = results['system.metrics'];
  if (m) {
    parts.push(
      `load ${m.loadavg.join(' ')}   cpu ${m.cpu_percent}%   memory ${formatBytes(m.mem_used_bytes)} used of ` +
        `${formatBytes(m.mem_total_bytes)} (${formatBytes(m.mem_free_bytes)} available)\n`,
    );
  }
  const disks = results['disk.usage'];
  if (disks) {
    parts.push(
      `\nDISKS\n${table(
        disks.mounts.map((d) => ({
          mount: d.mount,
          type: d.fstype,
          size: formatBytes(d.total_bytes),
          used: formatBytes(d.used_bytes),
          free: formatBytes(d.free_bytes),
          'use%': `${Math.round((d.used_bytes / Math.max(1, d.total_bytes)) * 100)}%`,
        })),
        ['mount', 'type', 'size', 'used', 'free', 'use%'],
      )}`,
    );
  }
  const net = results['network.interfaces'];
  if (net) {
    parts.push(
      `\nINTERFACES\n${table(
        net.interfaces.map((i) => ({
          name: i.name,
          addresses: i.addresses.map((a) => a.cidr ?? a.address).join(' ') || '-',
          mac: i.mac,
          rx: i.rx_bytes === null ? '-' : formatBytes(i.rx_bytes),
          tx: i.tx_bytes === null ? '-' : formatBytes(i.tx_bytes),
        })),
        ['name', 'addresses', 'mac', 'rx', 'tx'],
      )}`,
    );
  }
  const procs = results['process.list'];
  if (procs) {
    parts.push(
      `\nPROCESSES (${procs.processes.length} of ${procs.total}, by CPU)\n${table(
        procs.processes.map((p) => ({ pid: p.pid, user: p.user, 'cpu%': p.cpu, rss: formatBytes(p.rss), command: p.command.slice(0, 100) })),
        ['pid', 'user', 'cpu%', 'rss', 'command'],
      )}`,
    );
  }
  const tail = results['log.tail'];
  if (tail) {
    // The device caps a reply at 1 MiB: say so, or an operator takes the tail for the whole.
    if (tail.truncated) parts.push(`(only the newest ${tail.lines.length} lines fit in one reply; older ones were left out)\n`);
    parts.push(tail.lines.map((l) => `${l}\n`).join(''));
  }
  return parts.join('');
}

/** Checks the op and its options first (a usage mistake opens no session), then asks the device. */
export async function diag(ctx: Context, device: string, op: string | undefined, flags: DiagFlags): Promise<void> {
  checkDiagArgs(op, { path: flags.path, lines: flags.lines, limit: flags.limit });
  const open = { device, protocol: 'diagnostics' as const, ttl: 60, replace: flags.replace, waitOnline: flags.waitOnline, notice: ctx.notice };
  await withSessionStream(ctx.api(), open, async (stream) => {
    const ops: readonly DiagnosticOp[] = op ? [op] : SUMMARY_OPS;
    const results: Partial<Record<DiagnosticOp, unknown>> = {};
    for (const o of ops) results[o] = await stream.request(o, paramsFor(o, flags));
    if (flags.json) printJson(ctx.out, op ? results[op] : results);
    // Read as this version's device answers (not checked): printing only reads the fields.
    else ctx.out.stdout(describe(results as Partial<DiagnosticResults>));
  });
}
