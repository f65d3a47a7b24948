/**
 * @module Errors about paths say where the files root is (docs/session-streams.md, what the
 * device guarantees): device paths are relative to it, so `/etc/hostname` on a device whose
 * root is `/srv/tether` is `/srv/tether/etc/hostname`, and a bare "no such file" misleads. The
 * code stays as it was; only the message gains `the files root ROOT of DEVICE`: in its place
 * when the error says it names the root (`OpError.namesRoot`), else after the message.
 */
import { FILES_ROOT, OpError } from '../../shared/protocol/op-error';
import type { OpErrorBody, OpErrorCode } from '../../shared/protocol/session-stream';

/** The codes whose message names the files root. */
const ABOUT_PATHS: ReadonlySet<OpErrorCode> = new Set(['not_found', 'not_a_directory', 'path_outside_root']);

export interface FilesRootPlace {
  filesRoot: string;
  deviceId: string;
}

/** `body` (the answer to `err`) with the files root and the device named in its message, for the codes about paths. */
export function placeInFilesRoot(err: unknown, body: OpErrorBody, place: FilesRootPlace): OpErrorBody {
  if (!ABOUT_PATHS.has(body.code)) return body;
  const root = `${FILES_ROOT} ${place.filesRoot} of ${place.deviceId}`;
  const inPlace = err instanceof OpError && err.namesRoot;
  return { ...body, message: inPlace ? body.message.replace(FILES_ROOT, root) : `${body.message} under ${root}` };
}
