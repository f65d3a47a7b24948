/**
 * @module A `diagnostics` job on the device: one of the agent's read-only diagnostics ops
 * (../diagnostics/handler), its params checked as a diagnostics session checks them; its result
 * becomes the attempt's `result`, its error (the session-stream catalogue's code) the attempt's.
 */
import { DIAGNOSTIC_OPS } from '../diagnostics/handler';
import { toErrorBody } from '../requests';
import { failed, type KindRunner } from './outcome';

export const runDiagnosticsJob: KindRunner<'diagnostics'> = async (work, ctx) => {
  const op = Object.hasOwn(DIAGNOSTIC_OPS, work.op) ? DIAGNOSTIC_OPS[work.op] : undefined;
  if (!op) return failed('unknown_op', `this agent has no diagnostics op ${work.op}`);
  try {
    const result: unknown = await op({ id: 0, op: work.op, params: work.params ?? {} }, { sessionId: 'job', targets: [], log: ctx.log, config: ctx.config });
    return { status: 'succeeded', result };
  } catch (err) {
    const error = toErrorBody(err, ctx.log);
    return failed(error.code, error.message);
  }
};
