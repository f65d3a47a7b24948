/**
 * @module Stands in for node-pty's `lib/utils.js` in the one-file agent (scripts/package.mjs
 * redirects it): `loadNativeModule('pty')` returns the library carried as a SEA asset instead of
 * requiring `build/Release/pty.node` beside the script, which a single executable does not have.
 */
import { getAsset } from 'node:sea';
import { PTY_ASSET, loadPtyNative } from './native-pty';

/** As node-pty's own `assign`. */
export function assign<T extends object>(target: T, ...sources: object[]): T {
  for (const source of sources) Object.assign(target, source);
  return target;
}

let loaded: unknown;

/** node-pty's loader: `dir` is only used for macOS's spawn-helper, which Linux does not run. */
export function loadNativeModule(name: string): { dir: string; module: unknown } {
  if (name !== 'pty') throw new Error(`the one-file agent carries no native module ${name}.node`);
  loaded ??= loadPtyNative(new Uint8Array(getAsset(PTY_ASSET)));
  return { dir: '.', module: loaded };
}
