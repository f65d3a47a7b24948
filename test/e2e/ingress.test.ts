/**
 * The docker runtime's ingress against the real HAProxy (Debian's `haproxy`), with tiny Node HTTP
 * servers as replicas: routing by Host, an exact canary share, a backend swap under load that
 * answers every request, adoption of the running HAProxy by a new tether, and stop.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adoptIngress, IngressError, splitWeights, startIngress, type Ingress, type IngressOptions } from '../../api/services/docker/ingress';
import { command, parseServersState } from '../../api/services/docker/ingress/admin-socket';
import { createLogger } from '../../shared/log';
import { backend, closeBackends, freePort, get, haproxiesOf, load, running, tally, type Backend } from '../helpers/ingress';
import { systemProgram } from '../helpers/system-program';
import { waitFor } from '../helpers/wait';

let haproxyPath: string;
let base: string;
const logs: string[] = [];
const log = createLogger({ level: 'debug', write: (line) => logs.push(line) });
/** Every HAProxy pid a test saw, killed (by pid) at the end if a test left one running. */
const pids = new Set<number>();
const ingresses: Ingress[] = [];

beforeAll(() => {
  haproxyPath = systemProgram(['/usr/sbin/haproxy'], 'haproxy', 'the ingress tests');
  base = mkdtempSync(join(tmpdir(), 'tether-ingress-'));
});

afterEach(async () => {
  for (const ingress of ingresses.splice(0)) await ingress.stop().catch(() => undefined);
  await closeBackends();
});

afterAll(() => {
  for (const pid of pids) if (running(pid)) process.kill(pid, 'SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

function options(env: IngressOptions['environment'], dir: string, extra: Partial<IngressOptions> = {}): IngressOptions {
  return { environment: env, listen: '127.0.0.1:0', runDir: join(base, dir), log, haproxyPath, drainTimeoutMs: 10_000, ...extra };
}

async function start(opts: IngressOptions): Promise<Ingress> {
  const ingress = await startIngress(opts);
  pids.add(ingress.pid);
  ingresses.push(ingress);
  return ingress;
}

const route = (...bs: Backend[]) => bs.map((b) => ({ name: b.name, address: b.address, weight: 1 }));

describe('ingress', () => {
  it('routes by Host: the name, NAME.anything, unknown hosts 404, a service without servers 503', async () => {
    const ingress = await start(options('dev', 'routing'));
    expect(ingress.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(ingress.adopted).toBe(false);
    const [web, api] = [await backend('web-1'), await backend('api-1')];
    await ingress.setRoute('web', route(web));
    await ingress.setRoute('api', route(api));
    await ingress.setRoute('idle', []);

    expect(await get(ingress.endpoint, 'web')).toEqual({ status: 200, body: 'web-1' });
    expect(await get(ingress.endpoint, 'web.example.com:8080')).toEqual({ status: 200, body: 'web-1' });
    expect(await get(ingress.endpoint, 'API.internal')).toEqual({ status: 200, body: 'api-1' });
    for (const host of ['webx', 'web-canary.example.com', 'example.com', 'nothing']) expect((await get(ingress.endpoint, host)).status, host).toBe(404);
    expect((await get(ingress.endpoint, 'idle.example.com')).status).toBe(503);

    await ingress.removeRoute('api');
    expect((await get(ingress.endpoint, 'api')).status).toBe(404);
    expect(await ingress.routes()).toEqual(
      new Map([
        ['web', route(web)],
        ['idle', []],
      ]),
    );
    await expect(ingress.setRoute('Bad Name', [])).rejects.toMatchObject({ code: 'invalid_route' });
    await expect(ingress.setRoute('web', [{ name: 'x;y', address: web.address, weight: 1 }])).rejects.toBeInstanceOf(IngressError);
    await expect(ingress.setRoute('web', [{ name: 'x', address: 'localhost:80', weight: 1 }])).rejects.toMatchObject({ code: 'invalid_route' });
    await expect(ingress.setRoute('web', [{ name: 'x', address: web.address, weight: 257 }])).rejects.toMatchObject({ code: 'invalid_route' });
  });

  it('sends a 20 % canary exactly 100 of 500 requests, and 37 % with 3 + 2 servers exactly 370 of 1000', async () => {
    const ingress = await start(options('staging', 'canary'));
    const stable = [await backend('stable-1'), await backend('stable-2'), await backend('stable-3'), await backend('stable-4')];
    const canary = [await backend('canary-1')];
    const setShare = async (s: Backend[], c: Backend[], percent: number) => {
      const weights = splitWeights(
        s.map((b) => b.name),
        c.map((b) => b.name),
        percent,
      );
      await ingress.setRoute(
        'shop',
        [...s, ...c].map((b) => ({ name: b.name, address: b.address, weight: weights.get(b.name)! })),
      );
    };
    const canaryShare = (counts: Map<string, number>) => [...counts].filter(([k]) => k.startsWith('canary')).reduce((n, [, v]) => n + v, 0);

    await setShare(stable, canary, 20);
    const first = await tally(ingress.endpoint, 'shop', 500);
    expect(canaryShare(first)).toBe(100);
    expect([...first.values()].reduce((a, b) => a + b)).toBe(500);

    // Weights 21, 21, 21 : 19, 18, a cycle of 100. HAProxy's round robin carries its position over
    // a weight change, so the first cycle after one may be off by a request or two (measured: 36);
    // every full cycle after it is exact.
    await setShare(stable.slice(0, 3), [...canary, await backend('canary-2')], 37);
    const transition = canaryShare(await tally(ingress.endpoint, 'shop', 100));
    expect(Math.abs(transition - 37)).toBeLessThanOrEqual(3);
    const second = await tally(ingress.endpoint, 'shop', 1000);
    expect(canaryShare(second)).toBe(370);
    expect(second.get('stable-4')).toBeUndefined();

    // Halt (0 %) sends the canary nothing; 100 % sends it everything.
    await setShare(stable.slice(0, 3), canary, 0);
    expect(canaryShare(await tally(ingress.endpoint, 'shop', 60))).toBe(0);
    await setShare(stable.slice(0, 3), canary, 100);
    expect(canaryShare(await tally(ingress.endpoint, 'shop', 60))).toBe(60);
  });

  it('swaps a backend under continuous requests without one failure: add the new servers, drain and delete the old', async () => {
    const ingress = await start(options('prod', 'swap'));
    const v1 = [await backend('v1-a'), await backend('v1-b')];
    const v2 = [await backend('v2-a'), await backend('v2-b')];
    const v3 = [await backend('v3-a'), await backend('v3-b')];
    await ingress.setRoute('web', route(...v1));
    const traffic = load(ingress.endpoint, 'web');
    const ok = () => traffic.statuses.get('200') ?? 0;
    await waitFor(() => ok() > 100, 'traffic through the first servers');

    /** Slow requests in flight on the leaving servers while `change` runs: the drain lets them finish first. */
    async function swapWithSlowRequests(leaving: Backend[], change: () => Promise<void>) {
      const all = [...v1, ...v2, ...v3];
      const arrived = () => all.reduce((n, b) => n + b.slowArrived(), 0);
      const onLeavingNow = () => leaving.reduce((n, b) => n + b.slowInFlight(), 0);
      // Round robin beside the steady traffic decides where each lands: send them in fours, each
      // four arrived before the next, until one is in flight on a leaving server; then change.
      const slow: Array<Promise<{ status: number; body: string; at: number }>> = [];
      const start = arrived();
      while (onLeavingNow() === 0) {
        expect(slow.length).toBeLessThan(40);
        for (let i = 0; i < 4; i++) slow.push(get(ingress.endpoint, 'web', '/?delay=700').then((a) => ({ ...a, at: Date.now() })));
        await waitFor(() => arrived() - start >= slow.length, 'the slow requests to arrive');
      }
      const done = change().then(() => Date.now());
      const answers = await Promise.all(slow);
      expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
      const onLeaving = answers.filter((a) => leaving.some((b) => a.body === b.name));
      expect(onLeaving.length).toBeGreaterThan(0);
      expect(await done).toBeGreaterThanOrEqual(Math.max(...onLeaving.map((a) => a.at)));
      const before = ok();
      await waitFor(() => ok() > before + 100, 'traffic after the swap');
    }

    // In two steps (add, then remove), as a rollout does, and in one.
    await ingress.setRoute('web', route(...v1, ...v2));
    await waitFor(() => (traffic.bodies.get('v2-a') ?? 0) > 20, 'traffic through the added servers');
    await swapWithSlowRequests(v1, () => ingress.setRoute('web', route(...v2)));
    await swapWithSlowRequests(v2, () => ingress.setRoute('web', route(...v3)));
    await traffic.stop();

    expect([...traffic.statuses.keys()]).toEqual(['200']);
    log.info('swap measured', { requests: ok(), bodies: Object.fromEntries(traffic.bodies) });
    expect(await ingress.routes()).toEqual(new Map([['web', route(...v3)]]));
    const left = parseServersState(await command(join(base, 'swap', 'admin.sock'), 'show servers state'));
    expect(left.map((s) => s.name).sort()).toEqual(['v3-a', 'v3-b']);
    expect(await tally(ingress.endpoint, 'web', 20)).toEqual(
      new Map([
        ['v3-a', 10],
        ['v3-b', 10],
      ]),
    );
  });

  it('is adopted by a new tether with its routes: same HAProxy, no second one, no failed request', async () => {
    const opts = options('dev', 'adopt');
    const first = await start(opts);
    const config = join(base, 'adopt', 'haproxy.cfg');
    const [a, b] = [await backend('web-a'), await backend('web-b')];
    await first.setRoute('web', route(a, b));
    const traffic = load(first.endpoint, 'web.example.com');
    await waitFor(() => (traffic.statuses.get('200') ?? 0) > 50, 'traffic before the restart');

    // tether stops (close leaves HAProxy serving), then a new tether starts on the same run directory.
    await first.close();
    ingresses.splice(ingresses.indexOf(first), 1);
    await expect(first.setRoute('web', [])).rejects.toMatchObject({ code: 'closed' });
    const second = await start(opts);
    expect(second).toMatchObject({ adopted: true, pid: first.pid, endpoint: first.endpoint });
    expect(haproxiesOf(config)).toEqual([first.pid]);
    expect(await second.routes()).toEqual(new Map([['web', route(a, b)]]));

    // The adopted routes change like any other, and the object was just dropped: a third adopts too.
    const c = await backend('web-c');
    await second.setRoute('web', route(c));
    const third = await adoptIngress(opts);
    expect(third).toMatchObject({ adopted: true, pid: first.pid });
    expect(await third!.routes()).toEqual(new Map([['web', route(c)]]));
    await third!.close();
    const before = traffic.statuses.get('200') ?? 0;
    await waitFor(() => (traffic.bodies.get('web-c') ?? 0) > 20 && (traffic.statuses.get('200') ?? 0) > before + 50, 'traffic after the restart');
    await traffic.stop();
    expect([...traffic.statuses.keys()]).toEqual(['200']);
    expect(haproxiesOf(config)).toEqual([first.pid]);
    expect(await adoptIngress(options('dev', 'nothing-runs-here'))).toBeUndefined();
  });

  it('resumes a drain that a stopping tether left half done', async () => {
    const opts = options('dev', 'resume');
    const first = await start(opts);
    const [old, next] = [await backend('old'), await backend('next')];
    await first.setRoute('web', route(old));
    const slow = get(first.endpoint, 'web', '/?delay=1500');
    const socket = join(base, 'resume', 'admin.sock');
    const serversNow = async () => parseServersState(await command(socket, 'show servers state slot000'));
    await waitFor(async () => (await serversNow()).length === 1 && (await command(socket, 'show stat slot000 4 -1')).includes('old,'), 'the slow request');
    const swap = first.setRoute('web', route(next));
    await waitFor(async () => (await serversNow()).find((s) => s.name === 'old' && (s.admin & 0x08) !== 0), 'old draining');
    await first.close();
    await expect(swap).rejects.toMatchObject({ code: 'closed' });
    ingresses.splice(ingresses.indexOf(first), 1);

    const second = await start(opts);
    expect(second.adopted).toBe(true);
    expect(await slow).toEqual({ status: 200, body: 'old' });
    await waitFor(async () => (await serversNow()).map((s) => s.name).join() === 'next', 'the drained server deleted by the new tether');
    expect(await get(second.endpoint, 'web')).toEqual({ status: 200, body: 'next' });
  });

  it('moves its routes to a new HAProxy when the address changes, and refuses a service past the last slot', async () => {
    const first = await start(options('staging', 'move', { slots: 2 }));
    const a = await backend('a');
    await first.setRoute('one', route(a));
    await first.setRoute('two', route(a));
    await expect(first.setRoute('three', route(a))).rejects.toMatchObject({ code: 'no_free_slot' });
    await first.removeRoute('two');
    await first.setRoute('three', route(a));

    const port = await freePort();
    const moved = await start(options('staging', 'move', { listen: `127.0.0.1:${port}` }));
    // A new HAProxy: the slot count is this start's (the default), the routes the old one's.
    expect(moved).toMatchObject({ adopted: false, endpoint: `http://127.0.0.1:${port}`, slots: 128 });
    expect(running(first.pid)).toBe(false);
    expect(await moved.routes()).toEqual(
      new Map([
        ['one', route(a)],
        ['three', route(a)],
      ]),
    );
    expect(await get(moved.endpoint, 'three')).toEqual({ status: 200, body: 'a' });
  });

  it('stops: HAProxy ends, its files go, and the next start runs a new one', async () => {
    const opts = options('prod', 'stop');
    const first = await start(opts);
    await first.stop();
    expect(running(first.pid)).toBe(false);
    // Nothing answers there: refused, or reset when the keep-alive client still held a connection to it.
    await expect(get(first.endpoint, 'web')).rejects.toMatchObject({ code: expect.stringMatching(/^(ECONNREFUSED|ECONNRESET)$/) });
    expect(readdirSync(join(base, 'stop'))).toEqual([]);
    const second = await start(opts);
    expect(second.adopted).toBe(false);
    expect(second.pid).not.toBe(first.pid);
    await expect(startIngress({ ...opts, runDir: join(base, 'other'), haproxyPath: join(base, 'no-haproxy') })).rejects.toMatchObject({
      code: 'haproxy_missing',
    });
    // Another environment's HAProxy runs there: refused, not replaced.
    await expect(startIngress(options('dev', 'stop'))).rejects.toMatchObject({ code: 'haproxy_failed' });
    await expect(startIngress(options('dev', 'bad', { listen: 'localhost' }))).rejects.toMatchObject({ code: 'invalid_options' });
    await expect(startIngress(options('dev', 'bad', { slots: 0 }))).rejects.toMatchObject({ code: 'invalid_options' });
  });
});
