/** @module Tiny service images built FROM scratch with the static busybox through the Engine API, and pushed (bench/docker.ts). */
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import Docker from 'dockerode';
import * as tar from 'tar-stream';

import { type DockerDaemon, type Registry, type ServiceImageOptions, dockerPrograms } from './processes';

/** One JSON line of a build or push stream (the fields read here; the daemon sends more). */
interface ProgressEvent {
  error?: string;
  errorDetail?: { message?: string };
  [field: string]: unknown;
}

/** The JSON lines of a build or push stream; fails on the first error the daemon reports in it. */
async function follow(docker: Docker, stream: NodeJS.ReadableStream, what: string): Promise<ProgressEvent[]> {
  const events = await new Promise<ProgressEvent[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (err: Error | null, out: ProgressEvent[]) => (err ? reject(err) : resolve(out))),
  );
  const failed = events.find((e) => e.error || e.errorDetail);
  if (failed) throw new Error(`${what} failed: ${failed.error ?? failed.errorDetail?.message}`);
  return events;
}

/** The Dockerfile of a service image (see ServiceImageOptions). */
export function serviceDockerfile(port: number, healthy: boolean): string {
  const probe = `http://127.0.0.1:${port}/${healthy ? '' : 'no-such-page'}`;
  return [
    'FROM scratch',
    'COPY busybox /bin/busybox',
    'COPY www /www',
    `EXPOSE ${port}`,
    `HEALTHCHECK --interval=1s --timeout=3s --retries=3 CMD ["/bin/busybox","wget","-q","-O-","${probe}"]`,
    `CMD ["/bin/busybox","httpd","-f","-p","${port}","-h","/www"]`,
    '',
  ].join('\n');
}

/**
 * Builds `<registry>/tether-test/<name>:<tag>` on `daemon` through the Engine API (FROM scratch:
 * the static busybox, /www/index.html with `body`, httpd on `port`, a HEALTHCHECK that fails
 * when `healthy` is false), pushes it to `registry`, and returns that reference.
 */
export async function buildServiceImage(daemon: DockerDaemon, registry: Registry, options: ServiceImageOptions): Promise<string> {
  const { name, tag, port = 8080, healthy = true } = options;
  const body = options.body ?? `${name}:${tag}\n`;
  const reference = `${registry.url}/tether-test/${name}:${tag}`;
  const mtime = new Date(0);
  const pack = tar.pack();
  pack.entry({ name: 'Dockerfile', mode: 0o644, mtime }, serviceDockerfile(port, healthy));
  pack.entry({ name: 'busybox', mode: 0o755, mtime }, readFileSync((await dockerPrograms()).busybox));
  pack.entry({ name: 'www', type: 'directory', mode: 0o755, mtime });
  pack.entry({ name: 'www/index.html', mode: 0o644, mtime }, body);
  pack.finalize();
  const { docker } = daemon;
  await follow(docker, await docker.buildImage(Readable.from(pack), { t: reference, rm: true, forcerm: true }), `building ${reference}`);
  const push = await docker.getImage(reference).push({ authconfig: { serveraddress: registry.url } });
  await follow(docker, push, `pushing ${reference}`);
  return reference;
}
