/**
 * @module The model the completion scripts are written from: the commander program as a tree of
 * commands with their options and how each option's value completes, and the quoting and tables
 * the three scripts share.
 */
import type { Command, Option } from 'commander';

/**
 * What an option's value completes to: nothing (a flag), files, directories, the server's device
 * ids (`tether __complete-devices`), anything, or its choices.
 */
export type ValueKind = 'none' | 'files' | 'dirs' | 'devices' | 'any' | readonly string[];

export interface OptionSpec {
  short?: string;
  long?: string;
  value: ValueKind;
  description: string;
}

/** A command: its path of names below the program (`['deploy', 'canary']`), subcommands and options. */
export interface CommandSpec {
  path: string[];
  description: string;
  subcommands: CommandSpec[];
  options: OptionSpec[];
  /** Its first argument names an existing device (`shell <device>`, `device rm <device-id>`). */
  deviceArgument: boolean;
}

/** Commands whose `<device-id>` is a new id, not one to complete. */
const NEW_DEVICE = new Set(['device add']);

function valueKind(o: Option): ValueKind {
  if (!o.required && !o.optional) return 'none';
  if (o.argChoices) return o.argChoices;
  if (o.long === '--device') return 'devices';
  const placeholder = /[<[](.*?)[>\]]/.exec(o.flags)?.[1] ?? '';
  if (/dir/i.test(placeholder)) return 'dirs';
  return /file/i.test(placeholder) ? 'files' : 'any';
}

/** The tree of commands as `--help` shows them (hidden ones left out, help options in). */
export function specOf(cmd: Command, path: string[] = []): CommandSpec {
  const help = cmd.createHelp();
  return {
    path,
    description: cmd.description(),
    subcommands: help.visibleCommands(cmd).map((sub) => specOf(sub, [...path, sub.name()])),
    deviceArgument: /^devices?(-id)?$/.test(cmd.registeredArguments[0]?.name() ?? '') && !NEW_DEVICE.has(path.join(' ')),
    options: help.visibleOptions(cmd).map((o) => ({
      ...(o.short ? { short: o.short } : {}),
      ...(o.long ? { long: o.long } : {}),
      value: valueKind(o),
      description: o.description,
    })),
  };
}

export function flatten(spec: CommandSpec): CommandSpec[] {
  return [spec, ...spec.subcommands.flatMap(flatten)];
}

/** POSIX shells: a single-quoted word. */
export const sq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
/** fish: a single-quoted word. */
export const fishQ = (s: string) => `'${s.replace(/[\\']/g, (c) => `\\${c}`)}'`;
export const firstLine = (s: string) => s.split('\n')[0]!;
export const namesOf = (o: OptionSpec) => [o.short, o.long].filter((n): n is string => n !== undefined);
/** How an option's value is completed, as the scripts' tables write it. */
const valueWord = (v: ValueKind) => (typeof v === 'string' ? `@${v}` : v.join(' '));

/** The paths (`shell`, `device rm`) of the commands whose first argument is a device. */
export const deviceCommands = (all: CommandSpec[]) => all.filter((c) => c.deviceArgument).map((c) => c.path.join(' '));

/** The `path|option` keys of every option that takes a value, with how its value completes. */
export function valueOptions(all: CommandSpec[]): Array<[string, string]> {
  return all.flatMap((c) =>
    c.options.filter((o) => o.value !== 'none').flatMap((o) => namesOf(o).map((n): [string, string] => [`${c.path.join(' ')}|${n}`, valueWord(o.value)])),
  );
}
