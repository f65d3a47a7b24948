/**
 * @module Entry point of the single-file agent bundle (`dist/tether-agent.js`; README, installing the agent):
 * `node tether-agent.js [--server URL] [--device-id ID] [--token T] [--files-root DIR] [--log-dirs A:B]`.
 *
 * `tether agent` runs this bundle too (the `dist/tether.cjs` launcher loads it): it then answers
 * as `tether agent`, with the same options, and an agent's process holds only the agent, not the
 * client, the server and their libraries (issue 14: about 20 MiB less resident memory at idle).
 */
import { Command, CommanderError } from 'commander';
import { TETHER_VERSION } from '../shared/version';
import { addAgentOptions, agentFlagsOf } from './agent-options';
import { runAgent } from './run-agent';

const viaTether = require.main !== module;
const name = viaTether ? 'tether' : 'tether-agent';
const root = new Command(name).version(TETHER_VERSION).exitOverride();
const command = viaTether ? root.command('agent').description('run the device agent').exitOverride() : root;
if (!viaTether) command.description('the tether device agent: keeps a connection to the broker and serves sessions');

addAgentOptions(command).action(async (opts: Record<string, string | undefined>) => {
  await runAgent(agentFlagsOf(opts), process.env);
  process.exit(0);
});

root.parseAsync(process.argv).catch((err: Error) => {
  // --help and --version end here with code 0; usage mistakes with 2, as every tether command.
  if (err instanceof CommanderError) process.exit(err.exitCode === 0 ? 0 : 2);
  process.stderr.write(`${name}: ${err.message}\n`);
  process.exit(2);
});
