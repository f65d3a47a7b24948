/**
 * @module Errors about paths say where the files root is (docs/session-streams.md, what the
 * device guarantees): device paths are relative to it, so `/etc/hostname` on a device whose
 * root is `/srv/tether` is `/srv/tether/etc/hostname`, and a bare "no such file" misleads. The
 * code stays as it was; only the message gains `under the files root ROOT of DEVICE`.
 */
import type { ErrorBody } from '../../shared/session-stream';

/** The codes whose message names the files root. */
const ABOUT_PATHS: ReadonlySet<string> = new Set(['not_found', 'not_a_directory', 'path_outside_root']);

export interface FilesRootPlace {
  filesRoot: string;
  deviceId: string;
}

/** `body` with the files root and the device named in its message, for the codes about paths. */
export function placeInFilesRoot(body: ErrorBody, place: FilesRootPlace): ErrorBody {
  if (!ABOUT_PATHS.has(body.code)) return body;
  const root = `the files root ${place.filesRoot} of ${place.deviceId}`;
  // "… is outside the files root" reads better naming it in place than with a second mention.
  const message = body.message.includes('the files root') ? body.message.replace('the files root', root) : `${body.message} under ${root}`;
  return { ...body, message };
}
