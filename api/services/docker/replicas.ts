/**
 * @module What runs, read from the engine: an environment's replicas found by their labels, each
 * inspected for its state, health and published port. A replica is ready when its container
 * runs and, when it has a health check (the SSD's or the image's), is healthy.
 */
import type Docker from 'dockerode';
import type { Environment } from '../../store/services';
import { LABEL, labelFilter } from './labels';

export interface Replica {
  id: string;
  name: string;
  service: string;
  revision: string;
  /** The digest of the spec it was started with (`specDigest`). */
  spec: string;
  rollout: number;
  /** The engine's state: `running`, `restarting`, `exited`, `created`, `dead`, `paused`, `removing`. */
  state: string;
  /** `starting`, `healthy` or `unhealthy` when it has a health check. */
  health: string | undefined;
  /** What its last health check printed (why it is unhealthy). */
  lastCheck: string | undefined;
  ready: boolean;
  /** `127.0.0.1:PORT`, where its published port answers. */
  address: string | undefined;
  /** Unix seconds. */
  created: number;
}

/** States of containers that will not run again by themselves: removed and replaced. */
export const FINISHED = new Set(['exited', 'dead', 'created']);

const isNotFound = (err: unknown) => (err as { statusCode?: number }).statusCode === 404;

function publishedAddress(info: Docker.ContainerInspectInfo): string | undefined {
  for (const bindings of Object.values(info.NetworkSettings.Ports ?? {})) {
    const binding = bindings?.find((b) => b.HostPort);
    if (binding) return `127.0.0.1:${binding.HostPort}`;
  }
  return undefined;
}

/** One listed container, inspected; undefined when it went away in between. */
async function observe(docker: Docker, listed: Docker.ContainerInfo): Promise<Replica | undefined> {
  let info: Docker.ContainerInspectInfo;
  try {
    info = await docker.getContainer(listed.Id).inspect();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const labels = listed.Labels;
  const health = info.State.Health?.Status;
  const running = info.State.Status === 'running';
  return {
    id: listed.Id,
    name: (listed.Names[0] ?? listed.Id).replace(/^\//, ''),
    service: labels[LABEL.service] ?? '',
    revision: labels[LABEL.revision] ?? '',
    spec: labels[LABEL.spec] ?? '',
    rollout: Number(labels[LABEL.rollout] ?? 0),
    state: info.State.Status,
    health,
    lastCheck: info.State.Health?.Log?.at(-1)?.Output?.trim() || undefined,
    ready: running && (health === undefined || health === 'healthy'),
    address: running ? publishedAddress(info) : undefined,
    created: listed.Created,
  };
}

/** The replicas of an environment, or of one service, oldest first. */
export async function listReplicas(docker: Docker, environment: Environment, service?: string): Promise<Replica[]> {
  const listed = await docker.listContainers({ all: true, filters: { label: labelFilter(environment, service) } });
  const seen = await Promise.all(listed.map((c) => observe(docker, c)));
  return seen.filter((r): r is Replica => r !== undefined).sort((a, b) => a.created - b.created || a.name.localeCompare(b.name));
}

/** Splits a non-TTY log stream (8-byte frame headers: stream, 0, 0, 0, size) into its text. */
export function demuxLogs(buffer: Buffer): string {
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= buffer.length) {
    const kind = buffer[at]!;
    const size = buffer.readUInt32BE(at + 4);
    if (kind > 2 || buffer[at + 1] !== 0 || buffer[at + 2] !== 0 || buffer[at + 3] !== 0) break; // not framed: a TTY stream
    parts.push(buffer.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  if (at === 0 && buffer.length > 0) return buffer.toString('utf8');
  return Buffer.concat(parts).toString('utf8');
}

/** A replica's last `lines` lines of stdout and stderr, interleaved as written. */
export async function tailLogs(docker: Docker, id: string, lines: number): Promise<string[]> {
  try {
    const raw = (await docker.getContainer(id).logs({ stdout: true, stderr: true, tail: lines, follow: false })) as unknown as Buffer;
    const text = demuxLogs(Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw)));
    return text.split('\n').filter((line, i, all) => line !== '' || i < all.length - 1);
  } catch (err) {
    if (isNotFound(err)) return [];
    throw err;
  }
}
