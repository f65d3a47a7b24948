/** @module Runs the device agent in this process until SIGTERM/SIGINT (docs/settings.md, agent). */
import { statSync } from 'node:fs';
import { createAgent } from '../agent/agent';
import { loadAgentConfig, logSettings, type AgentFlags } from '../agent/config';
import { createLogger } from '../shared/log';
import { guardProcess } from './process-guard';

export async function runAgent(flags: AgentFlags, env: NodeJS.ProcessEnv): Promise<void> {
  const config = loadAgentConfig(flags, env);
  const log = createLogger(logSettings(config, process.stderr.isTTY === true), { component: 'agent', device_id: config.deviceId });
  guardProcess(log); // a bug in one handler must not cut the device off
  const agent = createAgent(config, { log });
  log.info('agent starting', { servers: config.servers.map((s) => s.connectUrl), files_root: config.filesRoot, log_dirs: config.logDirs });
  if (!statSync(config.filesRoot, { throwIfNoEntry: false })?.isDirectory()) {
    // Not fatal (it may be mounted later), but every transfer fails until it is there.
    log.warn(`the files root ${config.filesRoot} is not a directory; file transfers fail until it is (create it, or set --files-root)`);
  }
  agent.start();

  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      if (++signals > 1) process.exit(1); // a second signal: the user insists
      log.info('agent stopping', { signal });
      void agent.stop().then(resolve);
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}
