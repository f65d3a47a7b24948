/**
 * @module The diagnostics ops the client knows (docs/session-streams.md, protocols) and the
 * options each takes, so that a mistake in `tether diag` is a usage error found before any
 * session is opened (docs/cli.md, exit codes).
 */
import type { DiagnosticOp } from '../shared/protocol/diagnostics';
import { usageError } from './errors';

/** An option of `tether diag` that is a parameter of some ops only. */
export type DiagOption = 'path' | 'lines' | 'limit';

/** Every op and the options it takes (all of `shared/protocol/diagnostics.ts`, and only those). */
export const DIAG_OPS: Readonly<Record<string, readonly DiagOption[]>> = {
  'system.info': [],
  'system.metrics': [],
  'disk.usage': [],
  'network.interfaces': [],
  'process.list': ['limit'],
  'log.tail': ['path', 'lines'],
} satisfies Record<DiagnosticOp, readonly DiagOption[]>;

/** The ops of the summary `tether diag DEVICE` prints; `--limit` reaches its process list. */
export const SUMMARY_OPS = ['system.info', 'system.metrics', 'disk.usage', 'network.interfaces', 'process.list'] as const satisfies readonly DiagnosticOp[];

const SUMMARY_OPTIONS: readonly DiagOption[] = ['limit'];

/** Throws a usage error for an unknown op, or an option the op (or the summary) does not take. */
export function checkDiagArgs(op: string | undefined, given: Partial<Record<DiagOption, unknown>>): asserts op is DiagnosticOp | undefined {
  if (op !== undefined && !Object.hasOwn(DIAG_OPS, op)) {
    throw usageError(`unknown diagnostics op ${op}; the ops are ${Object.keys(DIAG_OPS).join(', ')}`);
  }
  const takes = op === undefined ? SUMMARY_OPTIONS : DIAG_OPS[op]!;
  const what = op ?? 'the summary';
  for (const option of Object.keys(given) as DiagOption[]) {
    if (given[option] === undefined || takes.includes(option)) continue;
    const owners = Object.keys(DIAG_OPS).filter((o) => DIAG_OPS[o]!.includes(option));
    throw usageError(`--${option} is not an option of ${what}; it goes with ${owners.join(', ')}`);
  }
  if (op === 'log.tail' && given.path === undefined) throw usageError("log.tail needs --path FILE (a log file inside the device's log dirs)");
}
