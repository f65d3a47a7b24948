/**
 * @module The `diagnostics` protocol's handler: read-only requests about the device, each answered
 * by one of the sibling modules. Nothing here writes or runs commands; every operation reads
 * `/proc`, `/sys`, the OS or the log dirs.
 */
import * as z from 'zod/mini';
import type { DiagnosticOp, DiagnosticResults } from '../../shared/protocol/diagnostics';
import type { Request, Response } from '../../shared/protocol/session-stream';
import type { Handler, HandlerContext, HandlerFactory } from '../protocol-handler';
import { OpError } from '../../shared/protocol/op-error';
import { paramsOf, parseRequest, toErrorBody } from '../requests';
import { diskUsage } from './disks';
import { logTail, MAX_TAIL_LINES } from './logs';
import { networkInterfaces } from './network';
import { processList } from './processes';
import { systemInfo, systemMetrics } from './system';

const noParams = z.strictObject({});
const processParams = z.strictObject({ limit: z._default(z.int().check(z.gte(1), z.lte(10_000)), 50) });
const tailParams = z.strictObject({
  path: z.string().check(z.minLength(1), z.maxLength(4096)),
  lines: z._default(z.int().check(z.gte(1), z.lte(MAX_TAIL_LINES)), 100),
});

/** An op: its params checked, then its result (`shared/protocol/diagnostics.ts`). */
type Op<K extends DiagnosticOp> = (req: Request, ctx: HandlerContext) => Promise<DiagnosticResults[K]>;

export const DIAGNOSTIC_OPS: { [K in DiagnosticOp]: Op<K> } = {
  'system.info': async (req) => (paramsOf(noParams, req), systemInfo()),
  'system.metrics': async (req) => (paramsOf(noParams, req), systemMetrics()),
  'disk.usage': async (req) => (paramsOf(noParams, req), diskUsage()),
  'network.interfaces': async (req) => (paramsOf(noParams, req), networkInterfaces()),
  'process.list': async (req) => processList(paramsOf(processParams, req).limit),
  'log.tail': async (req, ctx) => {
    const p = paramsOf(tailParams, req);
    return logTail(ctx.config.logDirs, p.path, p.lines);
  },
};

/** At most this many requests are worked on at once; further frames wait unread. */
const MAX_IN_FLIGHT = 4;

export const startDiagnostics: HandlerFactory = (stream, ctx): Handler => {
  let inFlight = 0;

  async function serve(req: Request): Promise<void> {
    const op = Object.hasOwn(DIAGNOSTIC_OPS, req.op) ? DIAGNOSTIC_OPS[req.op as DiagnosticOp] : undefined;
    try {
      if (!op) throw new OpError('unknown_op', `unknown op ${req.op}; known: ${Object.keys(DIAGNOSTIC_OPS).join(', ')}`);
      stream.sendJson({ id: req.id, ok: true, result: await op(req, ctx) } satisfies Response);
    } catch (err) {
      stream.sendJson({ id: req.id, ok: false, error: toErrorBody(err, ctx.log) } satisfies Response);
    }
  }

  stream.on('text', (text) => {
    const req = parseRequest(stream, text);
    if (!req) return;
    if (++inFlight >= MAX_IN_FLIGHT) stream.pause();
    void serve(req).finally(() => {
      if (--inFlight < MAX_IN_FLIGHT) stream.resume();
    });
  });
  stream.on('binary', () => {
    stream.sendJson({ id: null, ok: false, error: { code: 'bad_params', message: 'diagnostics takes text frames only' } });
  });

  return {
    async stop() {
      stream.close(1000, 'diagnostics ended');
    },
  };
};
