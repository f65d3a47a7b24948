/**
 * @module Asking before a command deletes something (docs/cli.md, conventions): on a terminal the
 * user answers y or n; without one (a script, a pipe) nobody can answer, so `--yes` must say it.
 */
import { createInterface } from 'node:readline/promises';
import { CliError, usageError } from './errors';

/**
 * Resolves once the user agreed to `what` (e.g. `delete device cam-7`): at once with `yes`,
 * else asked on the terminal. No terminal is a usage error; any answer but y or yes cancels.
 */
export async function confirm(what: string, consequence: string, yes: boolean | undefined): Promise<void> {
  if (yes) return;
  if (!process.stdin.isTTY) throw usageError(`standard input is not a terminal to confirm on; add --yes to ${what}`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  // Ctrl-C and Ctrl-D answer no, as an empty line does.
  const abort = new AbortController();
  rl.on('SIGINT', () => abort.abort());
  rl.on('close', () => abort.abort());
  let answer = '';
  try {
    answer = await rl.question(`${what}? ${consequence}. [y/N] `, { signal: abort.signal });
  } catch {
    process.stderr.write('\n');
  } finally {
    rl.close();
    process.stdin.pause();
  }
  if (!/^y(es)?$/i.test(answer.trim())) throw new CliError(`cancelled: did not ${what}`, 'cancelled');
}
