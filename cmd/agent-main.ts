/**
 * @module Entry point of the single-file agent bundle (`dist/tether-agent.js`; README, installing the agent):
 * `node tether-agent.js [--server URL] [--device-id ID] [--token T] [--files-root DIR] [--log-dirs A:B]`.
 */
import { Command } from 'commander';
import { TETHER_VERSION } from '../shared/version';
import { addAgentOptions, agentFlagsOf } from './agent-options';
import { runAgent } from './run-agent';

const program = new Command('tether-agent')
  .description('the tether device agent: keeps a connection to the broker and serves sessions')
  .version(TETHER_VERSION);
addAgentOptions(program).action(async (opts: Record<string, string | undefined>) => {
  await runAgent(agentFlagsOf(opts), process.env);
  process.exit(0);
});

program.parseAsync(process.argv).catch((err: Error) => {
  process.stderr.write(`tether-agent: ${err.message}\n`);
  process.exit(2);
});
