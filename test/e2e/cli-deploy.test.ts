/**
 * `tether deploy apply | list | get | history | logs | rollback | canary | rm` (docs/cli.md) as users run
 * them: the real `dist/tether.cjs` against a real server (simulated runtime), outcomes checked
 * through the API.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTether } from '../helpers/processes';
import { serviceSpec } from '../helpers/service-spec';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  stack = await startStack({ simReplicaMs: 20 });
  dir = tempDir('tether-deploy-specs-');
  env = { XDG_CONFIG_HOME: tempDir('tether-deploy-config-'), TETHER_SERVER: stack.url, TETHER_TOKEN: stack.adminToken };
});
afterAll(() => stack.stop());

/** `tether ARGS` as the administrator unless `extra` says otherwise. */
const tether = (args: string[], extra: Record<string, string> = {}, input = '') => runTether(args, { ...env, ...extra }, input);

/** Writes a spec file and returns its path. */
function specFile(name: string, yaml: string): string {
  const file = join(dir, name);
  writeFileSync(file, yaml);
  return file;
}

const service = (name: string, envName: string) => stack.admin.get(`/v1/services/${name}?env=${envName}`);

async function healthy(name: string, envName: string) {
  return waitFor(async () => {
    const s = (await service(name, envName)).body.data;
    return s?.status === 'healthy' && s;
  }, `${name} in ${envName} to be healthy`);
}

describe('deploy apply', () => {
  it('--dry-run checks the spec and says what would change, creating nothing', async () => {
    const file = specFile('dry.yaml', serviceSpec({ name: 'dry', tag: '1.2.3', replicas: 3 }));
    const res = await tether(['deploy', 'apply', '-f', file, '--env', 'dev', '--dry-run']);
    expect(res.code).toBe(0);
    expect(res.stdout.split('\n')).toEqual([
      'dry run: the spec is valid; nothing was changed. Applying it to dev would deploy dry:',
      '  revision  v1.2.3 (a new service)',
      '  image     registry.example.com/platform/dry:1.2.3',
      '  replicas  3',
      '  traffic   all to v1.2.3 as its replicas become ready (rolling)',
    ]);
    expect((await service('dry', 'dev')).status).toBe(404);
  });

  it('deploys and summarises; a second apply says what changed; --json is the API answer', async () => {
    const first = await tether(['deploy', 'apply', '-f', specFile('api-1.yaml', serviceSpec({ name: 'api', replicas: 2 })), '--env', 'staging']);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain('applied api to staging:\n  revision  v1.0.0 (a new service)\n');
    expect(first.stdout).toMatch(/^status: deploying, 0 of 2 replicas ready; follow it with `tether deploy get api --env staging`$/m);
    await healthy('api', 'staging');

    const second = await tether(['deploy', 'apply', '-f', specFile('api-2.yaml', serviceSpec({ name: 'api', tag: '1.1.0', replicas: 4 })), '--env', 'staging']);
    expect(second.code).toBe(0);
    expect(second.stdout).toContain(
      [
        '  revision  v1.0.0 -> v1.1.0',
        '  image     registry.example.com/platform/api:1.0.0 -> registry.example.com/platform/api:1.1.0',
        '  replicas  2 -> 4',
      ].join('\n'),
    );
    expect((await service('api', 'staging')).body.data).toMatchObject({ current_revision: 'v1.1.0', previous_revision: 'v1.0.0', replicas: { desired: 4 } });

    const json = await tether(['deploy', 'apply', '-f', join(dir, 'api-2.yaml'), '--env', 'staging', '--json']);
    const answer = JSON.parse(json.stdout);
    expect(answer).toMatchObject({ name: 'api', environment: 'staging', current_revision: 'v1.1.0', dry_run: false, runtime: 'simulated' });
  });

  it('prints every problem of an invalid spec as PATH: message (line N), like the API, and changes nothing', async () => {
    const yaml = serviceSpec({ name: 'Bad_Name', tag: 'latest', replicas: -1, extra: 'surprise: true' });
    const file = specFile('bad.yaml', yaml);
    const res = await tether(['deploy', 'apply', '-f', file, '--env', 'dev']);
    expect(res.code).toBe(1);
    expect(res.stdout).toBe('');
    const api = await stack.admin.raw('POST', '/v1/services?env=dev&dry_run=true', yaml, { 'content-type': 'application/yaml' });
    expect(api.status).toBe(422);
    const details = api.body.details as Array<{ path: string; message: string; line?: number }>;
    expect(details.length).toBeGreaterThanOrEqual(4);
    expect(res.stderr.split('\n')).toEqual([
      `tether: ${file} is not a valid service spec, ${details.length} problems (invalid_spec):`,
      ...details.map((d) => `  ${d.path}: ${d.message}${d.line ? ` (line ${d.line})` : ''}`),
    ]);
    expect(res.stderr).toMatch(/^ {2}service\.name: .* \(line 2\)$/m);
    expect((await service('Bad_Name', 'dev')).status).toBe(404);
  });

  it('reads the spec from standard input with -f -, and --wait returns once the rollout is healthy', async () => {
    const res = await tether(['deploy', 'apply', '-f', '-', '--env', 'dev', '--wait'], {}, serviceSpec({ name: 'piped', replicas: 3 }));
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('applied piped to dev:');
    expect(res.stderr.split('\n').at(-1)).toBe('healthy, 3 of 3 replicas ready');
    // healthy when the command returned, not later
    expect((await service('piped', 'dev')).body.data).toMatchObject({ status: 'healthy', gitops_sync_status: 'Synced' });
  });

  it('usage mistakes exit 2 before anything is sent; a missing file or a role too low exit 1 with the code', async () => {
    const file = specFile('prod.yaml', serviceSpec({ name: 'prodsvc' }));
    expect((await tether(['deploy', 'apply', '-f', file])).code).toBe(2); // no --env
    expect((await tether(['deploy', 'apply', '-f', file, '--env', 'qa'])).code).toBe(2);
    expect((await tether(['deploy', 'apply', '--env', 'dev'])).code).toBe(2); // no -f
    expect(await tether(['deploy', 'apply', '-f', join(dir, 'missing.yaml'), '--env', 'dev'])).toMatchObject({
      code: 1,
      stderr: `tether: cannot read ${join(dir, 'missing.yaml')}: no such file`,
    });
    const dev = await stack.userToken('dep-dev@example.com', 'developer');
    const refused = await tether(['deploy', 'apply', '-f', file, '--env', 'prod'], { TETHER_TOKEN: dev });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^tether: .*prod.* \(forbidden\)$/);
    expect((await service('prodsvc', 'prod')).status).toBe(404);
  });
});

describe('deploy list, get and history', () => {
  it('tables of services and revisions, and --json as the API answers', async () => {
    await tether(['deploy', 'apply', '-f', specFile('hist-1.yaml', serviceSpec({ name: 'hist' })), '--env', 'prod', '--wait']);
    await tether(['deploy', 'apply', '-f', specFile('hist-2.yaml', serviceSpec({ name: 'hist', tag: '2.0.0' })), '--env', 'prod', '--wait']);

    const list = await tether(['deploy', 'list', '--env', 'prod']);
    expect(list.code).toBe(0);
    const lines = list.stdout.split('\n');
    expect(lines[0]).toMatch(/^SERVICE\s+ENV\s+STATUS\s+REVISION\s+CANARY\s+READY\s+ENDPOINT\s+IMAGE\s+DEPLOYED$/);
    // the simulated runtime has no ingress (ENDPOINT -) and no per-revision counts
    expect(lines).toContainEqual(
      expect.stringMatching(/^hist\s+prod\s+healthy\s+v2\.0\.0\s+-\s+2\/2\s+-\s+registry\.example\.com\/platform\/hist:2\.0\.0\s+\S+Z$/),
    );
    // without --env: every environment
    const everywhere = await tether(['deploy', 'list']);
    expect(everywhere.stdout).toMatch(/^hist\s+prod\s/m);
    expect(everywhere.stdout).toMatch(/^api\s+staging\s/m);
    const listJson = JSON.parse((await tether(['deploy', 'list', '--env', 'prod', '--json'])).stdout);
    expect(listJson).toEqual((await stack.admin.get('/v1/services?env=prod&per_page=100')).body.data);

    const get = await tether(['deploy', 'get', 'hist', '--env', 'prod']);
    expect(get.stdout).toMatch(/^status +healthy, 2 of 2 replicas ready$/m);
    expect(get.stdout).toMatch(/^revision +v2\.0\.0$/m);
    expect(get.stdout).toMatch(/^previous +v1\.0\.0$/m);
    expect(get.stdout).toMatch(/^sync +Synced$/m);
    expect(get.stdout).toMatch(/^runtime +simulated$/m);
    expect(get.stdout).not.toMatch(/^(endpoint|ready|failed|canary) /m); // none of them with the simulated runtime, no canary
    expect(JSON.parse((await tether(['deploy', 'get', 'hist', '--env', 'prod', '--json'])).stdout)).toEqual((await service('hist', 'prod')).body.data);
    expect(await tether(['deploy', 'get', 'nope', '--env', 'prod'])).toMatchObject({ code: 1, stderr: 'tether: no service nope in prod (not_found)' });

    const history = await tether(['deploy', 'history', 'hist', '--env', 'prod']);
    expect(history.stdout.split('\n').map((l) => l.split(/\s+/).slice(0, 2))).toEqual([
      ['REVISION', 'STATUS'],
      ['v2.0.0', 'current'],
      ['v1.0.0', 'previous'],
    ]);
    expect(JSON.parse((await tether(['deploy', 'history', 'hist', '--env', 'prod', '--json'])).stdout)).toEqual(
      (await stack.admin.get('/v1/services/hist/revisions?env=prod&per_page=100')).body.data,
    );
  });
});

describe('deploy canary', () => {
  it('get, weight, halt and promote change the canary as the API shows; a weight out of range is a usage mistake', async () => {
    await tether(['deploy', 'apply', '-f', specFile('can-1.yaml', serviceSpec({ name: 'can', replicas: 2 })), '--env', 'dev', '--wait']);
    const canarySpec = specFile('can-2.yaml', serviceSpec({ name: 'can', tag: '2.0.0', replicas: 2, strategy: 'canary', weight: 20 }));
    const applied = await tether(['deploy', 'apply', '-f', canarySpec, '--env', 'dev']);
    expect(applied.stdout).toContain('  traffic   canary: 20% to v2.0.0, 80% stays on v1.0.0\n');
    expect(applied.stdout).toContain('promote the canary once it is ready with `tether deploy canary promote can --env dev`');
    const canary = async () => (await stack.admin.get('/v1/services/can/canary?env=dev')).body.data;

    const got = await tether(['deploy', 'canary', 'get', 'can', '--env', 'dev']);
    expect(got.stdout.split('\n').slice(0, 2)).toEqual([
      'can in dev: canary v2.0.0 takes 20% of traffic',
      expect.stringMatching(/^TRACK\s+REVISION\s+WEIGHT\s+IMAGE$/),
    ]);
    expect(got.stdout).toMatch(/^stable\s+v1\.0\.0\s+80%\s/m);
    expect(got.stdout).toMatch(/^canary\s+v2\.0\.0\s+20%\s/m);
    expect(JSON.parse((await tether(['deploy', 'canary', 'get', 'can', '--env', 'dev', '--json'])).stdout)).toEqual(await canary());

    const history = await tether(['deploy', 'history', 'can', '--env', 'dev']);
    expect(history.stdout).toMatch(/^v2\.0\.0\s+canary \(20%\)\s/m);
    // the service shows the split as it is now
    expect((await tether(['deploy', 'get', 'can', '--env', 'dev'])).stdout).toMatch(/^canary +v2\.0\.0 at 20% \(80% stays on v1\.0\.0\)$/m);
    expect((await tether(['deploy', 'list', '--env', 'dev'])).stdout).toMatch(/^can\s+dev\s+\S+\s+v1\.0\.0\s+v2\.0\.0 at 20%\s/m);

    const weight = await tether(['deploy', 'canary', 'weight', 'can', '50', '--env', 'dev']);
    expect(weight).toMatchObject({ code: 0, stdout: expect.stringContaining('canary v2.0.0 of can in dev now takes 50% of traffic') });
    expect((await canary()).canary.weight).toBe(50);

    for (const bad of ['101', '-5', '12.5', 'half']) {
      const res = await tether(['deploy', 'canary', 'weight', 'can', bad, '--env', 'dev']);
      expect(res.code, bad).toBe(2);
    }
    expect((await tether(['deploy', 'canary', 'weight', 'can', '101', '--env', 'dev'])).stderr).toContain('a whole number from 0 to 100');
    expect((await canary()).canary.weight).toBe(50);

    const halt = await tether(['deploy', 'canary', 'halt', 'can', '--env', 'dev']);
    expect(halt.stdout).toContain('halted canary v2.0.0 of can in dev: all traffic goes to v1.0.0');
    expect((await canary()).canary.weight).toBe(0);

    await healthy('can', 'dev');
    const promote = await tether(['deploy', 'canary', 'promote', 'can', '--env', 'dev']);
    expect(promote).toMatchObject({ code: 0, stdout: expect.stringContaining('promoted v2.0.0 of can in dev: it takes all traffic (previous: v1.0.0)') });
    expect(await canary()).toMatchObject({ canary_active: false, stable: { revision: 'v2.0.0', weight: 100 } });

    const none = await tether(['deploy', 'canary', 'promote', 'can', '--env', 'dev']);
    expect(none).toMatchObject({ code: 1, stderr: 'tether: can in dev has no canary deployed (conflict)' });
  });
});

describe('deploy logs', () => {
  it('says there are none with the simulated runtime; --json is the empty array; --lines is 1 to 1000', async () => {
    await tether(['deploy', 'apply', '-f', specFile('logs.yaml', serviceSpec({ name: 'logs', replicas: 1 })), '--env', 'dev', '--wait']);
    const res = await tether(['deploy', 'logs', 'logs', '--env', 'dev', '--lines', '20']);
    expect(res).toMatchObject({ code: 0, stdout: '', stderr: 'no logs: logs in dev runs on the simulated runtime, which runs nothing' });
    const json = await tether(['deploy', 'logs', 'logs', '--env', 'dev', '--json']);
    expect(JSON.parse(json.stdout)).toEqual([]);
    expect(JSON.parse(json.stdout)).toEqual((await stack.admin.get('/v1/services/logs/logs?env=dev')).body.data);
    for (const bad of ['0', '1001', 'all', '-3']) {
      const refused = await tether(['deploy', 'logs', 'logs', '--env', 'dev', '--lines', bad]);
      expect(refused.code, bad).toBe(2);
      expect(refused.stderr, bad).toContain('a whole number of lines from 1 to 1000');
    }
    expect((await tether(['deploy', 'logs', 'logs'])).code).toBe(2); // no --env
    expect(await tether(['deploy', 'logs', 'nope', '--env', 'dev'])).toMatchObject({ code: 1, stderr: 'tether: no service nope in dev (not_found)' });
  });
});

describe('deploy rollback and rm', () => {
  it('rollback goes to the previous revision or the one named; rm needs --yes without a terminal', async () => {
    for (const tag of ['1.0.0', '1.1.0', '1.2.0']) {
      await tether(['deploy', 'apply', '-f', specFile(`rb-${tag}.yaml`, serviceSpec({ name: 'rb', tag })), '--env', 'dev', '--wait']);
    }
    const back = await tether(['deploy', 'rollback', 'rb', '--env', 'dev']);
    expect(back).toMatchObject({ code: 0, stdout: expect.stringMatching(/^rolled back rb in dev to v1\.1\.0 \(from v1\.2\.0\); status: deploying/) });
    expect((await service('rb', 'dev')).body.data.current_revision).toBe('v1.1.0');

    const named = await tether(['deploy', 'rollback', 'rb', '--env', 'dev', '--revision', 'v1.0.0', '--json']);
    expect(JSON.parse(named.stdout)).toMatchObject({ name: 'rb', current_revision: 'v1.0.0' });
    expect((await service('rb', 'dev')).body.data.current_revision).toBe('v1.0.0');

    expect((await tether(['deploy', 'rollback', 'rb', '--env', 'dev', '--revision', '1.0'])).code).toBe(2);
    expect(await tether(['deploy', 'rollback', 'rb', '--env', 'dev', '--revision', 'v9.9.9'])).toMatchObject({
      code: 1,
      stderr: 'tether: rb in dev has no revision v9.9.9 (not_found)',
    });

    const refused = await tether(['deploy', 'rm', 'rb', '--env', 'dev']);
    expect(refused).toMatchObject({ code: 2, stderr: expect.stringContaining('add --yes to delete service rb from dev') });
    expect((await service('rb', 'dev')).status).toBe(200);
    const rm = await tether(['deploy', 'rm', 'rb', '--env', 'dev', '--yes']);
    expect(rm).toMatchObject({ code: 0, stdout: 'deleted service rb from dev' });
    expect((await service('rb', 'dev')).status).toBe(404);
    expect((await tether(['deploy', 'rm', 'rb', '--env', 'dev', '--yes'])).code).toBe(1);
  });
});
