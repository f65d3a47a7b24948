/**
 * @module The command line that runs this very tether again, for ssh's ProxyCommand and for the
 * `forward --stdio` master: `tether` itself when the one on the PATH is this one (it survives an
 * upgrade of Node), otherwise Node and this script, both absolute (`node dist/tether.cjs` in a clone).
 */
import { realpathSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

function realpath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}

/** The script this process runs (the bundle's `tether.cjs`, not the bundle part that was required). */
function script(): string | undefined {
  const arg = process.argv[1];
  return arg ? resolve(arg) : undefined;
}

/** `tether` on `path` (the PATH) when it is this script, absolute. */
function onPath(path: string | undefined): string | undefined {
  const mine = script() && realpath(script()!);
  if (!mine) return undefined;
  for (const dir of (path ?? '').split(delimiter)) {
    if (!dir.startsWith('/')) continue;
    const candidate = join(dir, 'tether');
    if (realpath(candidate) === mine) return candidate;
  }
  return undefined;
}

/** The program and its first arguments that run this tether. */
export function selfCommand(env: NodeJS.ProcessEnv = process.env): string[] {
  const installed = onPath(env.PATH);
  if (installed) return [installed];
  const s = script();
  return s ? [process.execPath, s] : [process.execPath];
}

/** `word` quoted for a POSIX shell (ssh runs a ProxyCommand with `sh -c`). */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}
