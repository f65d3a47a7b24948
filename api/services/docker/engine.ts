/**
 * @module The Docker Engine as the runtime uses it (dockerode): a client for `DOCKER_HOST`, one
 * network per environment, images pulled by reference with the registry credentials of Docker's
 * own config, replicas started and removed. Errors carry the engine's message, never a
 * container's environment (it holds secrets).
 */
import Docker from 'dockerode';
import type { Environment } from '../../store/services';
import { containerOptions, type ReplicaSpecInput } from './container-spec';
import { networkName } from './labels';
import { authFor } from './registry-auth';

/** A client for `unix:///path`, `tcp://host:port` (plain HTTP) or `http(s)://host:port`. */
export function connect(dockerHost: string): Docker {
  const url = new URL(dockerHost);
  if (url.protocol === 'unix:') return new Docker({ socketPath: decodeURIComponent(url.pathname) });
  if (url.protocol === 'tcp:' || url.protocol === 'http:' || url.protocol === 'https:') {
    const protocol = url.protocol === 'https:' ? 'https' : 'http';
    return new Docker({ host: url.hostname, port: url.port || (protocol === 'https' ? 2376 : 2375), protocol });
  }
  throw new Error(`DOCKER_HOST ${dockerHost} is not a unix://, tcp:// or http(s):// address`);
}

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

/** The engine's own words for a failed call, without the request that carried them. */
export function engineMessage(err: unknown): string {
  const json = (err as { json?: { message?: unknown } }).json;
  if (json && typeof json.message === 'string') return json.message;
  return err instanceof Error ? err.message : String(err);
}

async function stopped(container: Docker.Container, graceSeconds: number): Promise<void> {
  try {
    await container.stop({ t: graceSeconds });
  } catch (err) {
    if (statusOf(err) !== 304) throw err; // 304: it had stopped already
  }
}

export interface Engine {
  docker: Docker;
  ensureNetwork(environment: Environment): Promise<void>;
  /** Pulls `image` (`always`: even when it is present, for a tag that may have moved); falls back on a local copy. */
  ensureImage(image: string, always: boolean): Promise<void>;
  /** Creates and starts a replica; its id. */
  startReplica(input: ReplicaSpecInput): Promise<string>;
  /** Stops a replica (its init forwards SIGTERM; SIGKILL after `graceSeconds`) and removes it. */
  removeReplica(id: string, graceSeconds: number): Promise<void>;
}

export function createEngine(dockerHost: string, dockerConfig: string): Engine {
  const docker = connect(dockerHost);
  const networks = new Map<Environment, Promise<void>>();

  async function createNetwork(environment: Environment): Promise<void> {
    const name = networkName(environment);
    const existing = await docker.listNetworks({ filters: { name: [name] } });
    if (existing.some((n) => n.Name === name)) return;
    try {
      await docker.createNetwork({ Name: name, Driver: 'bridge', CheckDuplicate: true, Labels: { 'tether.env': environment } });
    } catch (err) {
      if (statusOf(err) !== 409) throw err; // 409: made meanwhile by another tether on this engine
    }
  }

  async function hasImage(image: string): Promise<boolean> {
    try {
      await docker.getImage(image).inspect();
      return true;
    } catch (err) {
      if (statusOf(err) === 404) return false;
      throw err;
    }
  }

  async function pull(image: string): Promise<void> {
    const auth = await authFor(dockerConfig, image);
    const stream = await docker.pull(image, auth ? { authconfig: auth } : {});
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(
        stream,
        (err: Error | null, events: Array<{ error?: string }>) => {
          const failed = events?.find((e) => e.error);
          if (err) reject(err);
          else if (failed) reject(new Error(failed.error));
          else resolve();
        },
        () => {},
      );
    });
  }

  return {
    docker,

    ensureNetwork(environment) {
      let made = networks.get(environment);
      if (!made) {
        made = createNetwork(environment);
        networks.set(environment, made);
        made.catch(() => networks.delete(environment));
      }
      return made;
    },

    async ensureImage(image, always) {
      if (!always && (await hasImage(image))) return;
      try {
        await pull(image);
      } catch (err) {
        if (await hasImage(image)) return; // the registry is away: the copy already here will do
        throw new Error(`pulling ${image} failed: ${engineMessage(err)}`);
      }
    },

    async startReplica(input) {
      const options = await containerOptions(input);
      let container: Docker.Container;
      try {
        container = await docker.createContainer(options);
      } catch (err) {
        // The network was removed by hand: made again on the next try.
        if (/network .* not found/i.test(engineMessage(err))) networks.delete(input.environment);
        throw new Error(`creating a replica of ${input.run.revision} failed: ${engineMessage(err)}`);
      }
      try {
        await container.start();
      } catch (err) {
        await container.remove({ force: true }).catch(() => {});
        throw new Error(`starting a replica of ${input.run.revision} failed: ${engineMessage(err)}`);
      }
      return container.id;
    },

    async removeReplica(id, graceSeconds) {
      const container = docker.getContainer(id);
      try {
        if (graceSeconds > 0) await stopped(container, graceSeconds);
        await container.remove({ force: true });
      } catch (err) {
        if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err; // gone, or already being removed
      }
    },
  };
}
