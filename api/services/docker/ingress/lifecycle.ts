/**
 * @module Finding or starting the HAProxy of a run directory. A running one is adopted when its
 * pid file names a live HAProxy of this directory's configuration whose admin socket answers with
 * that pid and this environment's description; its address and slot count are read back from
 * the configuration it runs, which tether never rewrites under a running HAProxy.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { Logger } from '../../../../shared/log';
import { command, parseInfo } from './admin-socket';
import { description, haproxyConfig, parseListen, type ListenAddress, type RunFiles } from './config';
import { IngressError } from './errors';
import { freePort, isOurHaproxy, isRunning, readPid, startDaemon, stopPid } from './haproxy-process';

export interface Running {
  pid: number;
  address: ListenAddress;
  slots: number;
  /** True when this HAProxy was running already (a tether restart). */
  adopted: boolean;
}

const READY_TIMEOUT_MS = 5000;
const PORT_ATTEMPTS = 3;

/** The address and slot count written into a configuration, or undefined when it is not ours. */
function configFacts(configFile: string): { address: ListenAddress; slots: number } | undefined {
  try {
    const text = readFileSync(configFile, 'utf8');
    const bind = /^\s*bind (\S+)$/m.exec(text)?.[1];
    const slots = text.match(/^backend slot\d{3}$/gm)?.length ?? 0;
    return bind ? { address: parseListen(bind), slots } : undefined;
  } catch {
    return undefined;
  }
}

/** The pid `show info` reports, with the environment it serves; undefined when the socket does not answer. */
async function identify(socket: string): Promise<{ pid: string | undefined; description: string | undefined } | undefined> {
  try {
    const info = parseInfo(await command(socket, 'show info', 2000));
    return { pid: info.get('Pid'), description: info.get('description') };
  } catch {
    return undefined;
  }
}

/** The running HAProxy of this run directory, or undefined (after clearing what a dead or wedged one left). */
export async function findRunning(files: RunFiles, environment: string, log: Logger): Promise<Running | undefined> {
  const pid = readPid(files.pid);
  if (pid === undefined || !isRunning(pid) || !isOurHaproxy(pid, files.config)) return undefined;
  const who = await identify(files.socket);
  const facts = configFacts(files.config);
  if (who?.description !== undefined && who.description !== description(environment)) {
    throw new IngressError('haproxy_failed', `the HAProxy in ${files.config} serves "${who.description}", not the ${environment} ingress`);
  }
  if (who?.pid === String(pid) && facts) return { pid, ...facts, adopted: true };
  log.warn('ingress HAProxy does not answer on its admin socket: replacing it', { pid, socket: files.socket });
  await stopPid(pid);
  return undefined;
}

/** Waits until the admin socket answers with `pid`. */
async function untilReady(socket: string, pid: number): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while ((await identify(socket))?.pid !== String(pid)) {
    if (!isRunning(pid)) throw new IngressError('haproxy_failed', `HAProxy (pid ${pid}) exited right after starting`);
    if (Date.now() > deadline) throw new IngressError('haproxy_failed', `HAProxy (pid ${pid}) does not answer on ${socket}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Writes a fresh configuration and an empty host map, and starts HAProxy on them. */
export async function launch(binary: string, files: RunFiles, environment: string, wanted: ListenAddress, slots: number): Promise<Running> {
  for (let attempt = 1; ; attempt++) {
    const address = { host: wanted.host, port: wanted.port || (await freePort(wanted.host)) };
    writeFileSync(files.hosts, '', { mode: 0o600 });
    writeFileSync(files.config, haproxyConfig({ environment, address, slots, files }), { mode: 0o600 });
    rmSync(files.pid, { force: true });
    try {
      const pid = await startDaemon(binary, files.config, files.pid);
      await untilReady(files.socket, pid);
      return { pid, address, slots, adopted: false };
    } catch (err) {
      // A port picked for us may have been taken before HAProxy bound it: pick another.
      const raced = wanted.port === 0 && err instanceof IngressError && /cannot bind|Address already in use/i.test(err.message);
      if (!raced || attempt >= PORT_ATTEMPTS) throw err;
    }
  }
}

/** Removes what a stopped HAProxy leaves in its run directory. */
export function removeRunFiles(files: RunFiles): void {
  for (const path of [files.pid, files.socket, files.hosts, files.config]) rmSync(path, { force: true });
}
