/**
 * @module `tether completion bash|zsh|fish`: a completion script for the shell, generated from
 * the commander program itself (its commands, options and their choices), so a new command or
 * option completes without anyone writing it here. Each script walks the words typed so far to
 * find the command they name, skipping options and their values, then offers that command's
 * subcommands, options, an option's choices, or files.
 */
import type { Command } from 'commander';
import { credentials } from '../config';
import type { Context } from '../context';
import { bash } from './completion/bash';
import { fish } from './completion/fish';
import { flatten, specOf } from './completion/spec';
import { zsh } from './completion/zsh';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** The completion script of `program` (the whole `tether` command) for `shell`. */
export function completionScript(program: Command, shell: Shell): string {
  const all = flatten(specOf(program));
  return shell === 'bash' ? bash(program, all) : shell === 'zsh' ? zsh(program, all) : fish(program, all);
}

export function completion(ctx: Context, program: Command, shell: Shell): void {
  ctx.out.stdout(completionScript(program, shell));
}

/**
 * `tether __complete-devices` (hidden; the scripts call it): the ids of the devices the caller
 * may see, one a line. Quiet and quick: no output, not an error, when the server cannot be asked.
 */
export async function completeDevices(ctx: Context): Promise<void> {
  try {
    const { server, token } = credentials(ctx.env);
    const res = await fetch(new URL('/v1/devices?per_page=200', server), {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(2_000),
    });
    if (!res.ok) return;
    const body = (await res.json()) as { data?: Array<{ device_id?: unknown }> };
    const ids = (body.data ?? []).map((d) => d.device_id).filter((id): id is string => typeof id === 'string');
    if (ids.length > 0) ctx.out.stdout(`${ids.join('\n')}\n`);
  } catch {
    // Completion must never print an error into the line being typed.
  }
}
