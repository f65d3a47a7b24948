/**
 * @module Entry point of the single-file agent bundle (`dist/tether-agent.js`; README, installing the agent)
 * and of the one-file executable (`dist/tether-agent-linux-x64`, scripts/package.mjs):
 * `node tether-agent.js [--server URL] [--device-id ID] [--token T] [--files-root DIR] [--log-dirs A:B]`.
 *
 * `tether agent` runs this bundle too (the `dist/tether.cjs` launcher loads it): it then answers
 * as `tether agent`, with the same options, and an agent's process holds only the agent, not the
 * client, the server and their libraries (issue 14: about 20 MiB less resident memory at idle).
 */
import { TETHER_VERSION } from '../shared/version';
import { describeProblems } from '../shared/zod-issues';
import { AgentUsageError, parseAgentArgs } from './agent-args';
import { ConfigError } from './config-error';
import { runAgent } from './run-agent';
import { unknownSettings } from './settings-names';

const viaTether = require.main !== module;
const name = viaTether ? 'tether' : 'tether-agent';
const command = viaTether
  ? { usage: 'tether agent', description: 'run the device agent', version: false }
  : { usage: 'tether-agent', description: 'the tether device agent: keeps a connection to the broker and serves sessions', version: true };

async function main(): Promise<void> {
  // After `tether` the first argument is the command's name.
  const parsed = parseAgentArgs(process.argv.slice(viaTether ? 3 : 2), command);
  if (parsed.kind === 'help') return void process.stdout.write(parsed.text);
  if (parsed.kind === 'version') return void process.stdout.write(`${TETHER_VERSION}\n`);
  // A misspelled name (TETHER_DEVICE_TOKN) stops the agent; another tether command's settings
  // (the server's, the CLI's TETHER_TOKEN) are left alone: a device may run those too.
  const unknown = unknownSettings(process.env);
  if (unknown.length > 0) throw new ConfigError(`invalid agent settings:\n  ${describeProblems(unknown, '\n  ')}`);
  await runAgent(parsed.flags, process.env);
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    // Usage mistakes and settings the agent cannot start with exit 2, as every tether command's.
    process.stderr.write(`${name}${err instanceof AgentUsageError && viaTether ? ' agent' : ''}: ${err.message}\n`);
    process.exit(2);
  },
);
