/**
 * @module Tar entry names made safe: tar-stream does not sanitise them, so both the agent
 * (uploads) and the client (downloads) split a name into plain relative segments and refuse
 * absolute names, `..`, NUL bytes and overlong names.
 */

export const MAX_ENTRY_NAME = 4096;
export const MAX_NAME_COMPONENT = 255;

export interface NameProblem {
  code: 'path_outside_root' | 'bad_params';
  message: string;
}

export type NameCheck = { ok: true; segments: string[] } | { ok: false; problem: NameProblem };

export function checkEntryName(name: string): NameCheck {
  const bad = (code: NameProblem['code'], message: string): NameCheck => ({ ok: false, problem: { code, message } });
  const shown = JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name);
  if (name.includes('\0')) return bad('path_outside_root', 'a tar entry name contains a NUL byte');
  if (name.length > MAX_ENTRY_NAME) return bad('bad_params', `a tar entry name is longer than ${MAX_ENTRY_NAME} characters`);
  if (name.startsWith('/') || name.startsWith('\\') || /^[A-Za-z]:[\\/]/.test(name)) {
    return bad('path_outside_root', `tar entry ${shown} has an absolute name`);
  }
  const segments = name.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
  if (segments.includes('..')) return bad('path_outside_root', `tar entry ${shown} climbs out with ..`);
  if (segments.some((s) => Buffer.byteLength(s) > MAX_NAME_COMPONENT)) {
    return bad('bad_params', `tar entry ${shown} has a name component over ${MAX_NAME_COMPONENT} bytes`);
  }
  return { ok: true, segments };
}
