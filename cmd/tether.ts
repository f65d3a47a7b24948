/**
 * @module The `tether` command: `server`, `agent`, the server host's commands (`backup`, `restore`,
 * `admin token`) and the client commands (docs/cli.md). Parses arguments,
 * runs the chosen command, and maps failures to exit codes (1 failure, 2 usage).
 */
import { Command, CommanderError } from 'commander';
import { createContext } from '../cli/context';
import { CliError } from '../cli/errors';
import { registerClientCommands } from '../cli/index';
import { TETHER_VERSION } from '../shared/version';
import { addAgentOptions, agentFlagsOf } from './agent-options';
import { registerHostCommands } from './host-commands';

class UsageError extends Error {}

async function runServer(configFile: string | undefined): Promise<void> {
  // Loaded only for `tether server` (YAML and zod: a fifth of a client command's start-up).
  const { ConfigError, loadServerConfig } = await import('./server-config');
  let config;
  try {
    config = loadServerConfig(process.env, configFile);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  // Loaded only for `tether server`: client commands start in a fraction of the time without
  // Koa, SQLite and the relay.
  const { startServer } = await import('./server');
  const server = await startServer(config, { guardProcess: true });
  await untilSignalled(() => server.stop());
}

async function runBroker(configFile: string | undefined): Promise<void> {
  const { ConfigError, loadEdgeConfig } = await import('./server-config');
  let config;
  try {
    config = loadEdgeConfig(process.env, configFile);
  } catch (err) {
    if (err instanceof ConfigError) throw new UsageError(err.message);
    throw err;
  }
  const { startEdgeNode } = await import('./edge-node');
  const node = await startEdgeNode(config, { guardProcess: true });
  await untilSignalled(() => node.stop());
}

/** Resolves once `stop` has run after SIGTERM or SIGINT; a second signal exits at once. */
function untilSignalled(stop: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = () => {
      if (++signals > 1) process.exit(1);
      void stop().then(resolve);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

const program = new Command('tether')
  .description('reach devices behind NAT: operator API, relay broker, device agent and client')
  .version(TETHER_VERSION)
  .exitOverride();

program
  .command('server')
  .description('run the API and the broker on one port (settings: TETHER_* environment or --config)')
  .option('--config <file>', 'YAML file of settings (names lower-cased without TETHER_)')
  .action(async (opts: { config?: string }) => {
    await runServer(opts.config);
    process.exit(0);
  });

program
  .command('broker')
  .description('run an edge node of a cluster: agents and session streams, no database (needs TETHER_NATS_URL and TETHER_PUBLIC_URL)')
  .option('--config <file>', 'YAML file of settings (names lower-cased without TETHER_)')
  .action(async (opts: { config?: string }) => {
    await runBroker(opts.config);
    process.exit(0);
  });

addAgentOptions(program.command('agent').description('run the device agent')).action(async (opts: Record<string, string | undefined>) => {
  try {
    const { runAgent } = await import('./run-agent');
    await runAgent(agentFlagsOf(opts), process.env);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  process.exit(0);
});

registerHostCommands(program);

let exitCode = 0;
registerClientCommands(
  program,
  () => createContext(),
  (code) => (exitCode = code),
);

/**
 * Exits once stdout and stderr are flushed: writes to a pipe are asynchronous, and exiting
 * at once cut `tether diag … | less` short by hundreds of kilobytes.
 */
function exitFlushed(code: number): void {
  let pending = 2;
  const done = () => {
    if (--pending === 0) process.exit(code);
  };
  process.stdout.write('', done);
  process.stderr.write('', done);
}

program.parseAsync(process.argv).then(
  () => exitFlushed(exitCode),
  (err: unknown) => {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; usage mistakes with 1 from commander.
      return exitFlushed(err.exitCode === 0 ? 0 : 2);
    }
    process.stderr.write(`tether: ${(err as Error).message}\n`);
    const usage = err instanceof UsageError || (err instanceof CliError && err.exitCode === 2);
    exitFlushed(usage ? 2 : 1);
  },
);
