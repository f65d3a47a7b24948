/**
 * @module The agent bundle's command line, on `util.parseArgs` and the option table of
 * `./agent-options`: what to do (run with these flags, print the help or the version), or a
 * usage error saying what is wrong. Help and errors read as the `tether` command's.
 */
import { parseArgs } from 'node:util';
import type { AgentFlags } from '../agent/config';
import { AGENT_OPTIONS, agentFlagsOf, optionSignature } from './agent-options';

export type AgentArgs = { kind: 'run'; flags: AgentFlags } | { kind: 'help'; text: string } | { kind: 'version' };

export class AgentUsageError extends Error {}

export interface AgentCommand {
  /** How the command is called: `tether agent` or `tether-agent`. */
  usage: string;
  description: string;
  /** Whether `-V, --version` is offered (the bundle run on its own). */
  version: boolean;
}

const HELP = { flag: 'help', signature: '-h, --help', help: 'display help for command' };
const VERSION = { flag: 'version', signature: '-V, --version', help: 'output the version number' };

export function helpText(command: AgentCommand): string {
  const rows = [
    ...(command.version ? [[VERSION.signature, VERSION.help]] : []),
    ...AGENT_OPTIONS.map((o) => [optionSignature(o), o.help]),
    [HELP.signature, HELP.help],
  ];
  const width = Math.max(...rows.map(([s]) => s!.length)) + 2;
  const lines = rows.map(([s, h]) => `  ${s!.padEnd(width)}${h}`);
  return `Usage: ${command.usage} [options]\n\n${command.description}\n\nOptions:\n${lines.join('\n')}\n`;
}

/** Reads `args` (the arguments after the command's name); throws an AgentUsageError on a mistake. */
export function parseAgentArgs(args: string[], command: AgentCommand): AgentArgs {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {
    help: { type: 'boolean', short: 'h' },
    ...(command.version ? { version: { type: 'boolean', short: 'V' } } : {}),
  };
  for (const o of AGENT_OPTIONS) options[o.flag] = { type: o.value ? 'string' : 'boolean', ...(o.repeatable && { multiple: true }) };
  let values: Record<string, string | string[] | boolean | undefined>;
  try {
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values as typeof values;
  } catch (err) {
    // parseArgs's own words ("Unknown option '--sever'"), first letter lowered, then where to look.
    const message = (err as Error).message.replace(/^\w/, (c) => c.toLowerCase()).replace(/\.$/, '');
    throw new AgentUsageError(`${message}; see ${command.usage} --help`);
  }
  if (values.help) return { kind: 'help', text: helpText(command) };
  if (values.version) return { kind: 'version' };
  const byField: Record<string, string | boolean | undefined> = {};
  for (const o of AGENT_OPTIONS) {
    const given = values[o.flag];
    // A repeated option's values arrive joined by commas, as from commander.
    if (Array.isArray(given)) byField[o.field] = given.join(',');
    // `--no-warm-shell` given means that switch is off, as commander reports it.
    else byField[o.field] = o.value ? given : given === true ? false : undefined;
  }
  return { kind: 'run', flags: agentFlagsOf(byField) };
}
