/**
 * The rules of the `docker` runtime's reconcile steps (api/services/docker/plan.ts, desired.ts),
 * and its small readers: start-first rollouts that keep the old replicas serving until every new
 * one is ready, canary routing at its weight, promotion, drift, the log stream demux, registry
 * credentials and secret paths.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { secretFile } from '../../../../api/services/docker/container-spec';
import { applied, weighted } from '../../../../api/services/docker/desired';
import { specDigest } from '../../../../api/services/docker/labels';
import { plan } from '../../../../api/services/docker/plan';
import { authFor, registryOf } from '../../../../api/services/docker/registry-auth';
import { demuxLogs, type Replica } from '../../../../api/services/docker/replicas';
import type { RevisionRun, RolloutTarget } from '../../../../api/services/runtime';

const run = (revision: string, env: Record<string, string> = {}): RevisionRun => ({
  revision,
  image: `registry.example.com/team/web:${revision.slice(1)}`,
  port: 8080,
  env,
  secrets: [],
});

const target = (r: RevisionRun, replicas: number, canary?: { stable: RevisionRun; weight: number }): RolloutTarget => ({
  service: 'web',
  environment: 'dev',
  rollout: 1,
  revision: r.revision,
  image: r.image,
  replicas,
  ready: 0,
  canary: canary && { stableRevision: canary.stable.revision, weight: canary.weight },
  run: r,
  stableRun: canary?.stable,
});

let n = 0;
const replica = (r: RevisionRun, ready: boolean, state = 'running'): Replica => {
  n++;
  return {
    id: `id${n}`,
    name: `web-${r.revision}-${n}`,
    service: 'web',
    revision: r.revision,
    spec: specDigest(r),
    rollout: 1,
    state,
    health: ready ? 'healthy' : 'starting',
    lastCheck: undefined,
    ready,
    address: state === 'running' ? `127.0.0.1:${40000 + n}` : undefined,
    created: n,
  };
};

const v1 = run('v1.0.0');
const v2 = run('v2.0.0');
const names = (rs: Array<{ name: string }>) => rs.map((r) => r.name).sort();

describe('a rolling update, start-first', () => {
  const desired = applied(target(v2, 2), undefined);

  it('starts the new replicas beside the old ones, which keep all traffic', () => {
    const old = [replica(v1, true), replica(v1, true)];
    const p = plan(desired, old);
    expect(p.start).toEqual([{ wanted: expect.objectContaining({ variant: expect.stringContaining('v2.0.0@') }), count: 2 }]);
    expect(names(p.route)).toEqual(names(old));
    expect(p.remove).toEqual([]);
    expect(p).toMatchObject({ complete: false, ready: 0, readyByRevision: { 'v2.0.0': 0 }, settled: false });
  });

  it('routes new replicas as they get ready, removing nothing until all are', () => {
    const old = [replica(v1, true), replica(v1, true)];
    const fresh = [replica(v2, true), replica(v2, false)];
    const p = plan(desired, [...old, ...fresh]);
    expect(p.start).toEqual([]);
    expect(names(p.route)).toEqual(names([...old, fresh[0]!]));
    expect(p.remove).toEqual([]);
    expect(p.waiting).toEqual([fresh[1]]);
  });

  it('once all are ready: only they are routed, then the old ones go', () => {
    const old = [replica(v1, true), replica(v1, false, 'restarting')];
    const fresh = [replica(v2, true), replica(v2, true)];
    const p = plan(desired, [...old, ...fresh]);
    expect(names(p.route)).toEqual(names(fresh));
    expect(names(p.remove)).toEqual(names(old));
    expect(p).toMatchObject({ complete: true, ready: 2, settled: false });
    expect(plan(desired, fresh).settled).toBe(true);
  });

  it('a changed spec of the same revision is a new rollout of it', () => {
    const changed = applied(target(run('v2.0.0', { MODE: 'fast' }), 1), undefined);
    const p = plan(changed, [replica(v2, true)]);
    expect(p.start).toHaveLength(1);
    expect(p.route).toHaveLength(1); // the old spec serves until the new one is ready
  });
});

describe('drift', () => {
  const desired = applied(target(v1, 2), undefined);

  it('replaces a finished replica and removes extras, keeping the ready ones', () => {
    const dead = replica(v1, false, 'exited');
    const p = plan(desired, [replica(v1, true), dead]);
    expect(p.start).toEqual([expect.objectContaining({ count: 1 })]);
    expect(p.remove).toEqual([dead]);

    const kept = [replica(v1, true), replica(v1, true)];
    const extra = replica(v1, false);
    const q = plan(desired, [extra, ...kept]);
    expect(q.remove).toEqual([extra]);
    expect(names(q.route)).toEqual(names(kept));
    expect(q.start).toEqual([]);
  });

  it('no replicas wanted: all go, nothing is routed', () => {
    const p = plan(applied(target(v1, 0), undefined), [replica(v1, true)]);
    expect(p.route).toEqual([]);
    expect(p.remove).toHaveLength(1);
    expect(p).toMatchObject({ complete: true, ready: 0 });
  });
});

describe('a canary', () => {
  const before = applied(target(v1, 3), undefined);
  const desired = applied(target(v2, 1, { stable: v1, weight: 20 }), before);

  it('keeps the stable revision at its own replica count and gives the canary its weight', () => {
    expect(desired.stableReplicas).toBe(3);
    const stable = [replica(v1, true), replica(v1, true), replica(v1, true)];
    const canary = replica(v2, true);
    const p = plan(desired, [...stable, canary]);
    const weight = (names: string[]) => p.route.filter((s) => names.includes(s.name)).reduce((sum, s) => sum + s.weight, 0);
    const canaryShare = weight([canary.name]) / weight(p.route.map((s) => s.name));
    expect(canaryShare).toBe(0.2);
    expect(p).toMatchObject({ complete: true, ready: 1, readyByRevision: { 'v1.0.0': 3, 'v2.0.0': 1 }, settled: true });
  });

  it('halted: weight 0; promoted: the stable replicas go once the route is the canary alone', () => {
    const stable = [replica(v1, true), replica(v1, true), replica(v1, true)];
    const canary = replica(v2, true);
    const halted = plan(weighted(desired, 0), [...stable, canary]);
    expect(halted.route.find((s) => s.name === canary.name)?.weight).toBe(0);
    const promoted = weighted(desired, 100);
    expect(promoted.target.canary).toBeUndefined();
    const p = plan(promoted, [...stable, canary]);
    expect(names(p.route)).toEqual([canary.name]);
    expect(names(p.remove)).toEqual(names(stable));
  });
});

describe('small readers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tether-docker-unit-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('demuxes a non-TTY log stream, and passes a TTY one through', () => {
    const frame = (kind: number, text: string) => {
      const body = Buffer.from(text);
      const head = Buffer.alloc(8);
      head[0] = kind;
      head.writeUInt32BE(body.length, 4);
      return Buffer.concat([head, body]);
    };
    expect(demuxLogs(Buffer.concat([frame(1, 'out 1\n'), frame(2, 'err 1\n'), frame(1, 'out 2\n')]))).toBe('out 1\nerr 1\nout 2\n');
    expect(demuxLogs(Buffer.from('plain text\n'))).toBe('plain text\n');
  });

  it("takes registry credentials from Docker's config, for the image's registry only", async () => {
    const config = join(dir, 'config.json');
    const auth = Buffer.from('ann:pa:ss').toString('base64');
    writeFileSync(config, JSON.stringify({ auths: { 'registry.example.com': { auth }, 'https://index.docker.io/v1/': { username: 'bob', password: 'x' } } }));
    expect(registryOf('registry.example.com/team/web:1.0.0')).toBe('registry.example.com');
    expect(registryOf('127.0.0.1:5000/team/web:1.0.0')).toBe('127.0.0.1:5000');
    expect(await authFor(config, 'registry.example.com/team/web:1.0.0')).toEqual({ username: 'ann', password: 'pa:ss', serveraddress: 'registry.example.com' });
    expect(await authFor(config, 'library/busybox:1.0.0')).toMatchObject({ username: 'bob' });
    expect(await authFor(config, 'other.example.com/team/web:1.0.0')).toBeUndefined();
    expect(await authFor(join(dir, 'missing.json'), 'registry.example.com/team/web:1.0.0')).toBeUndefined();
  });

  it('reads secrets only from inside the secrets directory', () => {
    expect(secretFile(dir, 'db/password')).toBe(join(dir, 'db', 'password'));
    for (const escape of ['../etc/passwd', '/etc/passwd', 'db/../../x', '.']) expect(() => secretFile(dir, escape)).toThrow(/leads out/);
  });
});
