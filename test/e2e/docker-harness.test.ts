/**
 * The harness of the docker runtime's end-to-end tests (test/helpers/docker.ts) works on this
 * machine: a dockerd of its own and a registry on a loopback port come up, images built in the
 * test are pushed and pulled back, a container from one answers on its port published on
 * 127.0.0.1 and turns healthy (and the broken image's turns unhealthy), and everything stops,
 * leaving no process, mount, dir or bridge behind.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServiceImage, DOCKER_SETUP_TIMEOUT_MS, isAlive, startDocker, startRegistry, type DockerDaemon, type Registry } from '../helpers/docker';
import { waitFor } from '../helpers/wait';

/** GET over loopback: status and body. */
async function getText(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(3000) });
  return { status: res.status, body: await res.text() };
}

const timings: Record<string, number> = {};
async function timed<T>(what: string, work: () => Promise<T>): Promise<T> {
  const start = performance.now();
  const result = await work();
  timings[what] = Math.round(performance.now() - start);
  return result;
}

let daemon: DockerDaemon;
let registry: Registry;

beforeAll(async () => {
  [daemon, registry] = await Promise.all([timed('startDocker', startDocker), timed('startRegistry', startRegistry)]);
}, DOCKER_SETUP_TIMEOUT_MS);

afterAll(() => {
  console.log(`docker harness on ${daemon?.bridge}, timings (ms): ${JSON.stringify(timings)}`);
});

async function run(docker: Docker, image: string): Promise<{ container: Docker.Container; port: number }> {
  const container = await docker.createContainer({
    Image: image,
    ExposedPorts: { '8080/tcp': {} },
    HostConfig: { PortBindings: { '8080/tcp': [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
  await container.start();
  const info = await container.inspect();
  const binding = info.NetworkSettings.Ports['8080/tcp']?.[0];
  expect(binding?.HostIp).toBe('127.0.0.1');
  // On the daemon's own bridge (only read here: the tests connect to 127.0.0.1 alone).
  expect(info.NetworkSettings.IPAddress.startsWith(daemon.subnet.replace(/0\/24$/, ''))).toBe(true);
  return { container, port: Number(binding!.HostPort) };
}

const health = async (container: Docker.Container) => (await container.inspect()).State.Health?.Status;

describe('the docker harness', () => {
  const refs: string[] = [];

  it('runs a dockerd of its own on its own socket and bridge, and a registry on loopback', async () => {
    expect(daemon.host).toBe(`unix://${daemon.socketPath}`);
    expect(await daemon.docker.ping()).toBeTruthy();
    const info = await daemon.docker.info();
    expect(info.DockerRootDir.startsWith(dirname(daemon.socketPath))).toBe(true);
    expect(existsSync(join(dirname(daemon.socketPath), 'key.json'))).toBe(true);
    // 127.0.0.0/8 is an insecure registry by default: plain HTTP to the test registry.
    expect(info.RegistryConfig.InsecureRegistryCIDRs).toContain('127.0.0.0/8');
    expect(registry.url).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it('builds two revisions of an image and pushes both', async () => {
    await timed('build+push two tags', async () => {
      for (const tag of ['v1', 'v2']) refs.push(await buildServiceImage(daemon, registry, { name: 'web', tag, body: `revision ${tag} of ${daemon.bridge}\n` }));
    });
    expect(refs).toEqual([`${registry.url}/tether-test/web:v1`, `${registry.url}/tether-test/web:v2`]);
    const tags = JSON.parse((await getText(`http://${registry.url}/v2/tether-test/web/tags/list`)).body);
    expect(tags.tags.sort()).toEqual(['v1', 'v2']);
  });

  it('runs a container pulled from the registry: it answers on 127.0.0.1 and turns healthy', async () => {
    const { docker } = daemon;
    // Pulled back from the registry, not the copy the build left.
    await docker.getImage(refs[1]!).remove();
    await timed('pull', async () => {
      const stream = await docker.pull(refs[1]!);
      await new Promise<void>((resolve, reject) => docker.modem.followProgress(stream, (err: Error | null) => (err ? reject(err) : resolve())));
    });
    const { container, port } = await run(docker, refs[1]!);
    const { status, body } = await waitFor(async () => {
      const res = await getText(`http://127.0.0.1:${port}/`);
      return res.status === 200 && res;
    }, 'the container to answer on its published port');
    expect(status).toBe(200);
    // Two daemons on one bridge would hand out the same addresses: this daemon's container, not another's.
    expect(body).toBe(`revision v2 of ${daemon.bridge}\n`);
    await timed('healthy', () => waitFor(async () => (await health(container)) === 'healthy', 'the container to turn healthy', 30_000, 200));
  });

  it('an image built with healthy: false turns unhealthy', async () => {
    const ref = await buildServiceImage(daemon, registry, { name: 'web', tag: 'broken', healthy: false });
    const { container, port } = await run(daemon.docker, ref);
    expect((await waitFor(() => getText(`http://127.0.0.1:${port}/`), 'the broken container to answer')).status).toBe(200);
    await timed('unhealthy', () => waitFor(async () => (await health(container)) === 'unhealthy', 'the container to turn unhealthy', 30_000, 200));
  });

  it('stops clean: no dockerd, containerd or registry left, no dir, mount or bridge', async () => {
    const dir = dirname(daemon.socketPath);
    const containerdPidFile = `${dir}/exec/containerd/containerd.pid`;
    const containerdPid = Number(readFileSync(containerdPidFile, 'utf8'));
    expect(isAlive(containerdPid)).toBe(true);
    await timed('stop', () => Promise.all([daemon.stop(), registry.stop()]));
    expect(isAlive(daemon.pid)).toBe(false);
    expect(isAlive(containerdPid)).toBe(false);
    expect(isAlive(registry.pid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(dir);
    expect(existsSync(`/sys/class/net/${daemon.bridge}`)).toBe(false);
    expect((await getText(`http://${registry.url}/v2/`).catch(() => undefined))?.status).toBeUndefined();
  });
});
