/**
 * @module The agent's command-line options, shared by `tether agent` and the agent bundle: one
 * table, read by commander in the `tether` command (for its help) and by `util.parseArgs` in the
 * agent bundle (`./agent-args`), which thereby holds no option library (commander and the
 * child_process it loads cost an idle agent 3 MiB; BENCHMARKS.md, issue 14).
 */
import type { Command } from 'commander';
import type { AgentFlags } from '../agent/config';

export interface AgentOption {
  /** The long flag without its dashes; a `no-` flag is a switch that turns something off. */
  flag: string;
  /** The value's name in the help (`<url>`); none for a switch. */
  value?: string;
  help: string;
  /** The AgentFlags field it fills. */
  field: keyof AgentFlags;
  /** May be given more than once; the values are joined by commas. */
  repeatable?: true;
}

export const AGENT_OPTIONS: readonly AgentOption[] = [
  {
    flag: 'server',
    value: '<url>',
    field: 'server',
    repeatable: true,
    help: 'broker URL; repeat it or separate several with commas for the nodes of a cluster (env TETHER_SERVER)',
  },
  { flag: 'device-id', value: '<id>', field: 'deviceId', help: "this device's id (env TETHER_DEVICE_ID)" },
  { flag: 'token', value: '<token>', field: 'token', help: 'agent token; prefer the environment (env TETHER_DEVICE_TOKEN)' },
  { flag: 'files-root', value: '<dir>', field: 'filesRoot', help: 'file transfer never reaches outside it (env TETHER_FILES_ROOT; default: working dir)' },
  { flag: 'log-dirs', value: '<dirs>', field: 'logDirs', help: 'colon-separated dirs log.tail may read (env TETHER_LOG_DIRS; default /var/log)' },
  { flag: 'max-sessions', value: '<n>', field: 'maxSessions', help: 'streams served at once (env TETHER_MAX_SESSIONS; default 16)' },
  { flag: 'max-upload-bytes', value: '<n>', field: 'maxUploadBytes', help: 'largest upload accepted, 0 = no limit (env TETHER_MAX_UPLOAD_BYTES; default 0)' },
  {
    flag: 'state-dir',
    value: '<dir>',
    field: 'stateDir',
    help: 'where the agent keeps its own files (env TETHER_STATE_DIR; default ~/.local/state/tether-agent)',
  },
  {
    flag: 'forward-allow',
    value: '<patterns>',
    field: 'forwardAllow',
    help: 'where port forwards may lead: comma-separated HOST:PORT, * for any port (env TETHER_FORWARD_ALLOW; default 127.0.0.1:*,localhost:*,[::1]:*)',
  },
  {
    flag: 'forward-max-connections',
    value: '<n>',
    field: 'forwardMaxConnections',
    help: 'TCP connections one port-forward session may hold at once (env TETHER_FORWARD_MAX_CONNECTIONS; default 64)',
  },
  {
    flag: 'forward-idle-timeout',
    value: '<seconds>',
    field: 'forwardIdleTimeout',
    help: 'reset a forwarded connection idle this long, 0 = never (env TETHER_FORWARD_IDLE_TIMEOUT; default 600)',
  },
  { flag: 'no-warm-shell', field: 'warmShell', help: 'do not keep a login shell started for the next shell session (env TETHER_WARM_SHELL=0)' },
];

/** `--flag <value>` or `--no-flag`, as the help shows it. */
export const optionSignature = (o: AgentOption): string => `--${o.flag}${o.value ? ` ${o.value}` : ''}`;

/** Adds the agent's options to a commander command (the `tether` command's `agent`). */
export function addAgentOptions(cmd: Command): Command {
  const collect = (value: string, previous: string | undefined) => (previous === undefined ? value : `${previous},${value}`);
  for (const o of AGENT_OPTIONS) {
    if (o.repeatable) cmd.option(optionSignature(o), o.help, collect);
    else cmd.option(optionSignature(o), o.help);
  }
  return cmd;
}

/**
 * The agent's flags from parsed options keyed by field name: a value for each option with one,
 * and a switch given (`true`) or, as commander reports `--no-x`, `false` when turned off.
 */
export function agentFlagsOf(o: Record<string, string | boolean | undefined>): AgentFlags {
  const flags: AgentFlags = {};
  for (const { field, value } of AGENT_OPTIONS) {
    // A `no-` switch given is a "0"; not given, it leaves the environment or the default to decide.
    if (!value) flags[field] = o[field] === false ? '0' : undefined;
    else flags[field] = o[field] as string | undefined;
  }
  return flags;
}
