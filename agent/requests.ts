/**
 * @module Request/response plumbing shared by the diagnostics and file-transfer handlers:
 * parse `{id, op, params}`, validate params with zod, answer `{id, ok, result|error}`.
 */
import type * as z from 'zod/mini';
import type { Logger } from '../shared/log';
import { OpError } from '../shared/protocol/op-error';
import { request, type OpErrorBody, type Request } from '../shared/protocol/session-stream';
import { describeProblems, problemsOf } from '../shared/zod-issues';
import type { DataStream } from './data-stream';

/** Parses a request's params or throws `bad_params` naming every problem. */
export function paramsOf<S extends z.ZodMiniType>(schema: S, req: Request): z.output<S> {
  const parsed = schema.safeParse(req.params ?? {});
  if (parsed.success) return parsed.data;
  throw new OpError('bad_params', describeProblems(problemsOf(parsed.error.issues, { prefix: ['params'] })));
}

/** What a failed system call answers, by its errno code; any other code is an `io_error` naming it. */
const ERRNO_ERRORS: Readonly<Record<string, OpErrorBody>> = {
  ENOENT: { code: 'not_found', message: 'no such file or directory' },
  ENOTDIR: { code: 'not_a_directory', message: 'a path component is not a directory' },
  EEXIST: { code: 'exists', message: 'it exists already' },
  ELOOP: { code: 'path_outside_root', message: 'refusing to follow a symbolic link' },
  EACCES: { code: 'io_error', message: 'permission denied' },
  EPERM: { code: 'io_error', message: 'permission denied' },
  ENOSPC: { code: 'io_error', message: 'no space left on the device' },
};

/** Maps anything thrown by an operation to an error code and a message safe to show. */
export function toErrorBody(err: unknown, log: Logger): OpErrorBody {
  if (err instanceof OpError) return { code: err.code, message: err.message };
  const e = err as NodeJS.ErrnoException;
  if (e.code !== undefined && Object.hasOwn(ERRNO_ERRORS, e.code)) return { ...ERRNO_ERRORS[e.code]! };
  log.warn('operation failed', { err: e.message, code: e.code });
  return { code: 'io_error', message: e.code ? `I/O error (${e.code})` : 'I/O error' };
}

/** Parses one text frame as a request; answers `bad_params` itself when it is not one. */
export function parseRequest(stream: DataStream, text: string): Request | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    stream.sendJson({ id: null, ok: false, error: { code: 'bad_params', message: 'frame is not JSON' } });
    return undefined;
  }
  const parsed = request.safeParse(raw);
  if (!parsed.success) {
    const id = typeof (raw as { id?: unknown })?.id === 'number' ? (raw as { id: number }).id : null;
    stream.sendJson({ id, ok: false, error: { code: 'bad_params', message: 'expected {"id": N, "op": "...", "params": {...}}' } });
    return undefined;
  }
  return parsed.data;
}
