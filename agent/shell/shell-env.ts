/**
 * @module The environment of every process the agent starts for a user (its shells). The agent's
 * own environment holds its settings, the device token among them (`TETHER_DEVICE_TOKEN`), and
 * the switches of its own runtime and service; a user who types `env` would print them into the
 * session and its recording (kept for 90 days). So a shell gets the agent's environment without
 * any `TETHER_*` variable and without the variables that address the agent process itself; its
 * login profile sets the rest, as on any login.
 */

/** Variables meant for the agent's process alone, never for the programs of its users. */
const AGENT_ONLY = new Set([
  // The agent's Node runtime flags (a heap limit, a `--require` preload, `--inspect`) would apply
  // to every `node` a user runs in the shell.
  'NODE_OPTIONS',
  // What systemd hands the agent's unit (systemd.exec(5)): its state and credentials directories,
  // its notification and activation sockets, its journal stream and invocation.
  'STATE_DIRECTORY',
  'RUNTIME_DIRECTORY',
  'CACHE_DIRECTORY',
  'LOGS_DIRECTORY',
  'CONFIGURATION_DIRECTORY',
  'CREDENTIALS_DIRECTORY',
  'NOTIFY_SOCKET',
  'LISTEN_FDS',
  'LISTEN_PID',
  'LISTEN_FDNAMES',
  'WATCHDOG_PID',
  'WATCHDOG_USEC',
  'INVOCATION_ID',
  'JOURNAL_STREAM',
]);

const TETHER_VARIABLE = /^tether_/i;

/** `env` without the agent's own variables, plus `extra`. */
export function userEnvironment(env: NodeJS.ProcessEnv, extra: Record<string, string> = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || TETHER_VARIABLE.test(name) || AGENT_ONLY.has(name)) continue;
    out[name] = value;
  }
  return Object.assign(out, extra);
}
