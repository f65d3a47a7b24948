/** The deployment interface end to end (seed 2.3–2.6, 3.2, 3.5, 4.2, 5 rule 7; CONTRACT 5). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '../helpers/http';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';
import { serviceSpec as ssd } from '../helpers/service-spec';

let stack: Stack;
let dev: Client;
let pe: Client;
let none: Client;

beforeAll(async () => {
  stack = await startStack({ simReplicaMs: 20 });
  dev = stack.as(await stack.userToken('dep-dev@example.com', 'developer'));
  pe = stack.as(await stack.userToken('dep-pe@example.com', 'platform-engineer'));
  none = stack.as(await stack.userToken('dep-none@example.com', null));
});
afterAll(() => stack.stop());

const apply = (c: Client, env: string, yaml: string, query = '') =>
  c.raw('POST', `/v1/services?env=${env}${query}`, yaml, { 'content-type': 'application/yaml' });

async function healthy(name: string, env: string) {
  return waitFor(async () => {
    const s = (await stack.admin.get(`/v1/services/${name}?env=${env}`)).body.data;
    return s.status === 'healthy' && s;
  }, `${name} in ${env} to be healthy`);
}

const history = async (name: string, env: string) =>
  (await stack.admin.get(`/v1/services/${name}/revisions?env=${env}`)).body.data.map((r: any) => [r.revision, r.status]);

describe('apply', () => {
  it('deploys, then the runtime makes replicas ready: deploying → healthy, OutOfSync → Synced', async () => {
    const res = await apply(dev, 'dev', ssd({ name: 'api', replicas: 3 }));
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      name: 'api',
      environment: 'dev',
      status: 'deploying',
      image: 'registry.example.com/platform/api:1.0.0',
      replicas: { desired: 3, ready: 0 },
      current_revision: 'v1.0.0',
      previous_revision: null,
      last_deployed_at: expect.any(String),
      dry_run: false,
      runtime: 'simulated',
    });
    const got = (await stack.admin.get('/v1/services/api?env=dev')).body.data;
    expect(got.gitops_sync_status).toBe(got.replicas.ready === 3 ? 'Synced' : 'OutOfSync');
    const done = await healthy('api', 'dev');
    expect(done).toMatchObject({ replicas: { desired: 3, ready: 3 }, gitops_sync_status: 'Synced', previous_revision: null });
    const second = await apply(dev, 'dev', ssd({ name: 'api', tag: 'v1.1.0', replicas: 3 }));
    expect(second.body.data).toMatchObject({ status: 'deploying', current_revision: 'v1.1.0', previous_revision: 'v1.0.0' });
  });

  it('dry_run=true validates and changes nothing', async () => {
    const res = await apply(dev, 'dev', ssd({ name: 'dry' }), '&dry_run=true');
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ name: 'dry', dry_run: true, current_revision: 'v1.0.0' });
    expect((await stack.admin.get('/v1/services/dry?env=dev')).status).toBe(404);
    expect((await stack.admin.get('/v1/services/dry/revisions?env=dev')).status).toBe(404);
    expect((await stack.admin.get('/v1/audit/deployments?service=dry')).body.data).toEqual([]);
    // and on an existing service: nothing moves
    await apply(dev, 'dev', ssd({ name: 'dry2' }));
    const before = await healthy('dry2', 'dev');
    const dry = await apply(dev, 'dev', ssd({ name: 'dry2', tag: '2.0.0' }), '&dry_run=true');
    expect(dry.body.data).toMatchObject({ current_revision: 'v2.0.0', previous_revision: 'v1.0.0', dry_run: true });
    expect((await stack.admin.get('/v1/services/dry2?env=dev')).body.data).toEqual(before);
    expect(await history('dry2', 'dev')).toEqual([['v1.0.0', 'current']]);
    const invalid = await apply(dev, 'dev', 'service: {}\n', '&dry_run=true');
    expect(invalid.status).toBe(422);
  });

  const missing = (path: string) => ({ path, message: 'is required' });
  it.each([
    ['no service', ssd().replace(/^service:\n {2}name: web\n {2}image: \S+\n/m, ''), [missing('service')]],
    ['no service.name', ssd().replace('  name: web\n', ''), [missing('service.name')]],
    ['no service.image', ssd().replace(/ {2}image: \S+\n/, ''), [missing('service.image')]],
    ['no deployment', ssd().replace(/^deployment:\n {2}replicas: 2\n/m, ''), [missing('deployment')]],
    ['no replicas', ssd().replace('  replicas: 2\n', '  strategy: rolling\n'), [missing('deployment.replicas')]],
    ['replicas as a string', ssd().replace('replicas: 2', 'replicas: "two"'), [{ path: 'deployment.replicas', message: 'must be a number' }]],
    ['fractional replicas', ssd().replace('replicas: 2', 'replicas: 1.5'), [{ path: 'deployment.replicas', message: 'must be a whole number' }]],
    ['too many replicas', ssd().replace('replicas: 2', 'replicas: 1001'), [{ path: 'deployment.replicas', message: expect.any(String) }]],
    ['an upper-case name', ssd().replace('name: web', 'name: Web_App'), [{ path: 'service.name', message: expect.stringContaining('DNS label') }]],
    [
      'an image without a tag',
      ssd().replace(/image: \S+/, 'image: registry.example.com/platform/web'),
      [{ path: 'service.image', message: expect.stringContaining('host/repository/name:tag') }],
    ],
    [
      'an image with a non-semver tag',
      ssd().replace(/image: \S+/, 'image: registry.example.com/platform/web:latest'),
      [{ path: 'service.image', message: expect.any(String) }],
    ],
    ['an image without a registry host', ssd().replace(/image: \S+/, 'image: web:1.0.0'), [{ path: 'service.image', message: expect.any(String) }]],
    [
      'an http broker URL',
      ssd().replace('wss://broker.example.com/ws', 'https://broker.example.com/ws'),
      [{ path: 'remote-access.broker-url', message: 'must be a ws:// or wss:// URL' }],
    ],
    [
      'an unknown protocol',
      ssd().replace('[diagnostics, shell]', '[diagnostics, telnet]'),
      [{ path: 'remote-access.protocols[1]', message: expect.stringMatching(/^must be one of .*shell/) }],
    ],
    ['no protocols', ssd().replace('[diagnostics, shell]', '[]'), [{ path: 'remote-access.protocols', message: 'must name at least one protocol' }]],
    ['enabled as a string', ssd().replace('enabled: true', 'enabled: "yes"'), [{ path: 'remote-access.enabled', message: 'must be true or false' }]],
    [
      'a lowercase vault env name',
      ssd().replace('env: WEB_TOKEN', 'env: web_token'),
      [{ path: 'secrets.vault[0].env', message: expect.stringContaining('environment variable name') }],
    ],
    [
      'a lowercase config env name',
      ssd().replace('LOG_LEVEL: info', 'log_level: info'),
      [{ path: 'config.env.log_level', message: expect.stringContaining('environment variable name') }],
    ],
    [
      'a config value that is a number',
      ssd().replace('"3600"', '3600'),
      [{ path: 'config.env.SESSION_TTL_SECONDS', message: 'must be a string (quote numbers and booleans)' }],
    ],
    ['an unknown top-level key', ssd({ extra: 'extras: true' }), [{ path: 'extras', message: 'unknown key' }]],
    [
      'an unknown nested key',
      ssd().replace('  replicas: 2\n', '  replicas: 2\n  autoscale: true\n'),
      [{ path: 'deployment.autoscale', message: 'unknown key' }],
    ],
    [
      'a misspelled key',
      ssd().replace('  replicas: 2\n', '  replica: 2\n'),
      [
        { path: 'deployment.replicas', message: 'is required' },
        { path: 'deployment.replica', message: 'unknown key; did you mean replicas?' },
      ],
    ],
    ['a canary weight of 100', ssd({ strategy: 'canary', weight: 100 }), [{ path: 'deployment.canary.weight', message: expect.any(String) }]],
  ])('422 invalid_spec for %s, with its path', async (_name, yaml, details) => {
    const res = await apply(dev, 'dev', yaml);
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ error: 'invalid_spec', status: 422 });
    expect(res.body.details.map(({ line: _l, ...d }: { line?: number }) => d)).toEqual(details);
    for (const d of res.body.details) expect(d.line).toBeGreaterThanOrEqual(1);
  });

  it('reports every problem at once, and YAML syntax errors with their line', async () => {
    const many = ssd().replace('name: web', 'name: -bad').replace('replicas: 2', 'replicas: -1').replace('env: WEB_TOKEN', 'env: 1X');
    const res = await apply(dev, 'dev', many);
    expect(res.body.details.map((d: { path: string; line: number }) => [d.path, d.line])).toEqual([
      ['service.name', 2],
      ['deployment.replicas', 5],
      ['secrets.vault[0].env', 14],
    ]);
    const broken = await apply(dev, 'dev', 'service:\n  name: web\n  image: [unclosed\ndeployment:\n  replicas: 1\n');
    expect(broken.status).toBe(422);
    expect(broken.body.details[0]).toMatchObject({ path: '(root)', message: expect.stringContaining('YAML syntax error'), line: expect.any(Number) });
    expect((await apply(dev, 'dev', '- just\n- a list\n')).body.details[0].message).toContain('mapping');
    // A tag that is not a valid URI: the library wraps a URIError; its class name stays inside.
    const badTag = await apply(dev, 'dev', ': >!foo !!omap %YAML 1.1\n---\n');
    expect(badTag.status).toBe(422);
    expect(badTag.body.details).toContainEqual({ path: '(root)', message: 'YAML syntax error: URI malformed', line: 1 });
    expect(badTag.text).not.toMatch(/[A-Za-z]+Error:/);
    expect((await stack.admin.get('/v1/services/web?env=dev')).status).toBe(404); // nothing applied
  });

  const aliasLimit = expect.stringContaining('aliases are limited to 100');
  it.each([
    ['101 aliases of one anchor', `a: &a [x]\nb: [${Array(101).fill('*a').join(', ')}]\n`, { path: 'b[100]', message: aliasLimit, line: 2 }],
    [
      'an alias bomb (billion laughs)',
      'a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n',
      { path: 'd[0]', message: aliasLimit, line: 4 },
    ],
    ['an alias without an anchor', `${ssd()}extra: *nope\n`, { path: 'extra', message: expect.stringContaining('unknown alias *nope'), line: 19 }],
    [
      'an alias inside its own anchor',
      'service: &s\n  name: *s\n',
      { path: 'service.name', message: expect.stringContaining('refers to a node that contains it'), line: 2 },
    ],
    [
      'a YAML 1.1 merge of a scalar',
      `%YAML 1.1\n---\nx: &x 1\n${ssd()}y:\n  <<: *x\n`,
      { path: '(root)', message: expect.stringContaining('the YAML cannot be turned into values') },
    ],
    ['a duplicate key', ssd().replace('  name: web\n', '  name: web\n  name: web2\n'), { path: 'service.name', message: 'duplicate key', line: 3 }],
    ['a collection as a key', `${ssd()}? [a, b]\n: 1\n`, { path: '(root)', message: expect.stringContaining('keys must be plain values'), line: 19 }],
    ['flow collections 100,000 deep', '['.repeat(100_000) + ']'.repeat(100_000), { path: '(root)', message: 'nesting is limited to 32 levels', line: 1 }],
    [
      'block mappings 1,000 deep',
      Array.from({ length: 1000 }, (_, i) => `${' '.repeat(i)}a:`).join('\n'),
      { path: '(root)', message: 'nesting is limited to 32 levels', line: 33 },
    ],
    ['100,000 nested compact sequences', `${'- '.repeat(100_000)}x\n`, { path: '(root)', message: 'nesting is limited to 32 levels', line: 1 }],
  ])('hostile YAML: 422 invalid_spec for %s, never a 500', async (_name, yaml, detail) => {
    // Three times: a deep document used to pass once and then abort the whole server process.
    for (let i = 0; i < 3; i++) {
      const res = await apply(dev, 'dev', yaml, '&dry_run=true');
      expect(res.status, res.text.slice(0, 300)).toBe(422);
      expect(res.body).toMatchObject({ error: 'invalid_spec', status: 422 });
      expect(res.body.details).toEqual([detail]);
    }
    expect((await dev.get('/v1/services?env=dev')).status).toBe(200); // still serving
    expect(stack.logs.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  });

  it('anchors and aliases within the limit are fine: 100 aliases, and a YAML 1.1 merge of a mapping', async () => {
    const env = Array.from({ length: 100 }, (_, i) => `    VAR_${i}: *v`).join('\n');
    const aliased = ssd().replace('    LOG_LEVEL: info\n', `    LOG_LEVEL: &v info\n${env}\n`);
    const res = await apply(dev, 'dev', aliased, '&dry_run=true');
    expect(res.status, res.text.slice(0, 300)).toBe(200);
    const merged = `%YAML 1.1\n---\n${ssd().replace(/^service:\n {2}name: web\n/m, 'service:\n  <<: &named {name: web}\n')}`;
    expect((await apply(dev, 'dev', merged, '&dry_run=true')).body.data).toMatchObject({ name: 'web', dry_run: true });
  });

  it('hostile YAML: a 700 KiB mapping of 80,000 keys is refused at once, not parsed for minutes', async () => {
    // The library's own duplicate-key check is quadratic: this held the event loop for minutes.
    const keys = Array.from({ length: 80_000 }, (_, i) => `k${i}: 1`).join('\n');
    const started = performance.now();
    const res = await apply(dev, 'dev', keys, '&dry_run=true');
    expect(res.status).toBe(422);
    expect(res.body.details).toEqual([{ path: '(root)', message: expect.stringContaining('the spec is too large'), line: expect.any(Number) }]);
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('415 without a YAML content type; 400 without a valid env; 413 past 1 MiB', async () => {
    const json = await dev.raw('POST', '/v1/services?env=dev', ssd(), { 'content-type': 'application/json' });
    expect(json.status).toBe(415);
    expect(json.body.error).toBe('unsupported_media_type');
    expect((await dev.raw('POST', '/v1/services?env=dev', ssd(), { 'content-type': 'text/yaml; charset=utf-8' })).status).toBe(200);
    for (const q of ['', '?env=qa', '?env=dev&dry_run=maybe', '?env=dev&env=prod', '?env=dev&force=1']) {
      const res = await dev.raw('POST', `/v1/services${q}`, ssd(), { 'content-type': 'application/yaml' });
      expect(res.status, q).toBe(400);
      expect(res.body.error).toBe('bad_request');
    }
    const missing = await dev.get('/v1/services');
    expect(missing.status).toBe(400);
    expect(missing.body.details).toEqual([{ path: 'env', message: 'is required: dev, staging or prod' }]);
    expect((await dev.get('/v1/services?env=qa')).body.details).toEqual([{ path: 'env', message: 'must be dev, staging or prod' }]);
    const big = await apply(dev, 'dev', ssd() + `# ${'x'.repeat(1024 * 1024)}\n`);
    expect(big.status).toBe(413);
  });
});

describe('roles per environment', () => {
  it('apply: developer+ in dev and staging, platform-engineer+ in prod', async () => {
    expect((await apply(dev, 'staging', ssd({ name: 'roles' }))).status).toBe(200);
    const prod = await apply(dev, 'prod', ssd({ name: 'roles' }));
    expect(prod.status).toBe(403);
    expect(prod.body.message).toContain('platform-engineer');
    expect((await apply(pe, 'prod', ssd({ name: 'roles' }))).status).toBe(200);
    expect((await apply(none, 'dev', ssd({ name: 'roles' }))).status).toBe(403);
    expect((await none.get('/v1/services?env=dev')).status).toBe(403);
    expect((await dev.get('/v1/services/roles?env=prod')).status).toBe(200); // reads: developer+
  });

  it('rollback: developer in dev, platform-engineer in staging and prod; delete: platform-engineer+', async () => {
    for (const env of ['dev', 'staging', 'prod']) {
      await apply(pe, env, ssd({ name: 'rb-roles', tag: '1.0.0' }));
      await apply(pe, env, ssd({ name: 'rb-roles', tag: '1.1.0' }));
    }
    expect((await dev.post('/v1/services/rb-roles/rollback?env=dev', {})).status).toBe(200);
    for (const env of ['staging', 'prod']) {
      const denied = await dev.post(`/v1/services/rb-roles/rollback?env=${env}`, {});
      expect(denied.status, env).toBe(403);
      expect(denied.body.message).toContain('platform-engineer');
      expect((await pe.post(`/v1/services/rb-roles/rollback?env=${env}`, {})).status).toBe(200);
    }
    const del = await dev.del('/v1/services/rb-roles?env=dev');
    expect(del.status).toBe(403);
    expect((await pe.del('/v1/services/rb-roles?env=dev')).body).toEqual({
      status: 200,
      data: { name: 'rb-roles', environment: 'dev', deleted: true },
    });
    expect((await pe.get('/v1/services/rb-roles?env=dev')).status).toBe(404);
    expect((await pe.get('/v1/services/rb-roles?env=prod')).status).toBe(200); // other environments untouched
    expect((await pe.del('/v1/services/rb-roles?env=dev')).status).toBe(404);
  });

  it('canary changes follow the apply rules; the deployment audit is for administrators', async () => {
    await apply(pe, 'prod', ssd({ name: 'can-roles', tag: '1.0.0' }));
    await apply(pe, 'prod', ssd({ name: 'can-roles', tag: '2.0.0', strategy: 'canary' }));
    expect((await dev.put('/v1/services/can-roles/canary/weight?env=prod', { weight: 50 })).status).toBe(403);
    expect((await dev.post('/v1/services/can-roles/canary/halt?env=prod')).status).toBe(403);
    expect((await dev.post('/v1/services/can-roles/canary/promote?env=prod')).status).toBe(403);
    expect((await dev.get('/v1/services/can-roles/canary?env=prod')).status).toBe(200);
    expect((await pe.get('/v1/audit/deployments')).status).toBe(403);
    const audit = await stack.admin.get('/v1/audit/deployments?service=can-roles&env=prod');
    expect(audit.body.data.map((e: any) => [e.event, e.revision, e.actor])).toEqual([
      ['service.applied', 'v2.0.0', 'dep-pe@example.com'],
      ['service.applied', 'v1.0.0', 'dep-pe@example.com'],
    ]);
    expect(audit.body.data[0]).toMatchObject({ environment: 'prod', at: expect.any(String), details: { strategy: 'canary' } });
  });
});

describe('revisions and rollback', () => {
  it('rolls back through a chain: v1, v2, v3; rollback; rollback to v1', async () => {
    for (const tag of ['1.0.0', '2.0.0', '3.0.0']) expect((await apply(dev, 'dev', ssd({ name: 'chain', tag }))).status).toBe(200);
    expect(await history('chain', 'dev')).toEqual([
      ['v3.0.0', 'current'],
      ['v2.0.0', 'previous'],
      ['v1.0.0', 'available'],
    ]);
    const back = await dev.post('/v1/services/chain/rollback?env=dev', {});
    expect(back.body.data).toMatchObject({
      status: 'deploying',
      current_revision: 'v2.0.0',
      previous_revision: 'v3.0.0',
      image: 'registry.example.com/platform/chain:2.0.0',
      dry_run: false,
    });
    expect(await history('chain', 'dev')).toEqual([
      ['v2.0.0', 'current'],
      ['v3.0.0', 'previous'],
      ['v1.0.0', 'available'],
    ]);
    const toV1 = await dev.post('/v1/services/chain/rollback?env=dev&revision=v1.0.0', {});
    expect(toV1.body.data).toMatchObject({ current_revision: 'v1.0.0', previous_revision: 'v2.0.0' });
    expect(await history('chain', 'dev')).toEqual([
      ['v1.0.0', 'current'],
      ['v2.0.0', 'previous'],
      ['v3.0.0', 'available'],
    ]);
    await healthy('chain', 'dev');
    const entry = (await stack.admin.get('/v1/services/chain/revisions?env=dev')).body.data[0];
    expect(entry).toMatchObject({ image: 'registry.example.com/platform/chain:1.0.0', deployed_by: 'dep-dev@example.com' });
  });

  it('refuses what cannot be rolled back: 409 without a previous or to the current, 404 for unknown', async () => {
    await apply(dev, 'dev', ssd({ name: 'solo' }));
    const none = await dev.post('/v1/services/solo/rollback?env=dev', {});
    expect(none.status).toBe(409);
    expect(none.body.error).toBe('conflict');
    expect((await dev.post('/v1/services/solo/rollback?env=dev&revision=v1.0.0', {})).status).toBe(409);
    expect((await dev.post('/v1/services/solo/rollback?env=dev&revision=v9.9.9', {})).status).toBe(404);
    expect((await dev.post('/v1/services/ghost/rollback?env=dev', {})).status).toBe(404);
    expect((await dev.post('/v1/services/solo/rollback?env=dev&revision=latest', {})).status).toBe(400);
    expect((await dev.post('/v1/services/solo/rollback?env=dev', { force: true })).status).toBe(400);
  });

  it('applying an existing tag replaces its stored spec', async () => {
    await apply(dev, 'dev', ssd({ name: 'respec', replicas: 1 }));
    await apply(dev, 'dev', ssd({ name: 'respec', tag: '2.0.0' }));
    await apply(dev, 'dev', ssd({ name: 'respec', replicas: 4 })); // v1.0.0 again, new spec
    const back = await dev.post('/v1/services/respec/rollback?env=dev', {});
    expect(back.body.data).toMatchObject({ current_revision: 'v2.0.0' });
    const again = await dev.post('/v1/services/respec/rollback?env=dev&revision=v1.0.0', {});
    expect(again.body.data.replicas.desired).toBe(4);
  });
});

describe('canary', () => {
  it('start, weight, halt, resume, promote, with history after each step', async () => {
    await apply(dev, 'dev', ssd({ name: 'can', tag: '1.0.0' }));
    await healthy('can', 'dev');
    expect((await dev.get('/v1/services/can/canary?env=dev')).body.data).toEqual({
      service: 'can',
      environment: 'dev',
      canary_active: false,
      stable: { revision: 'v1.0.0', image: 'registry.example.com/platform/can:1.0.0', weight: 100 },
      canary: null,
    });
    expect((await dev.put('/v1/services/can/canary/weight?env=dev', { weight: 50 })).status).toBe(409);
    expect((await dev.post('/v1/services/can/canary/promote?env=dev')).status).toBe(409);

    const started = await apply(dev, 'dev', ssd({ name: 'can', tag: '2.0.0', strategy: 'canary', weight: 20 }));
    expect(started.body.data).toMatchObject({ current_revision: 'v1.0.0', status: 'deploying' });
    expect(await history('can', 'dev')).toEqual([
      ['v2.0.0', 'available'],
      ['v1.0.0', 'current'],
    ]);
    const state = (await dev.get('/v1/services/can/canary?env=dev')).body.data;
    expect(state).toMatchObject({ canary_active: true, stable: { revision: 'v1.0.0', weight: 80 }, canary: { revision: 'v2.0.0', weight: 20 } });

    const weighted = await dev.put('/v1/services/can/canary/weight?env=dev', { weight: 60 });
    expect(weighted.body.data).toMatchObject({ canary_active: true, stable: { weight: 40 }, canary: { weight: 60 } });

    const halted = await dev.post('/v1/services/can/canary/halt?env=dev');
    expect(halted.body.data).toMatchObject({ canary_active: true, stable: { weight: 100 }, canary: { revision: 'v2.0.0', weight: 0 } });
    expect(await history('can', 'dev')).toEqual([
      ['v2.0.0', 'available'],
      ['v1.0.0', 'current'],
    ]);
    const resumed = await dev.put('/v1/services/can/canary/weight?env=dev', { weight: 30 });
    expect(resumed.body.data.canary.weight).toBe(30);

    await healthy('can', 'dev'); // the canary's replicas are ready
    const promoted = await dev.post('/v1/services/can/canary/promote?env=dev');
    expect(promoted.body.data).toMatchObject({
      status: 'healthy',
      current_revision: 'v2.0.0',
      previous_revision: 'v1.0.0',
      image: 'registry.example.com/platform/can:2.0.0',
      dry_run: false,
    });
    expect(await history('can', 'dev')).toEqual([
      ['v2.0.0', 'current'],
      ['v1.0.0', 'previous'],
    ]);
    expect((await dev.get('/v1/services/can/canary?env=dev')).body.data).toMatchObject({ canary_active: false, canary: null });
    const events = (await stack.admin.get('/v1/audit/deployments?service=can')).body.data.map((e: any) => e.event);
    expect(events).toEqual(['canary.promoted', 'canary.weight_set', 'canary.halted', 'canary.weight_set', 'service.applied', 'service.applied']);
  });

  it('weight 100 promotes and weight 0 halts; bad weights are 400', async () => {
    await apply(dev, 'dev', ssd({ name: 'can2', tag: '1.0.0' }));
    await apply(dev, 'dev', ssd({ name: 'can2', tag: '1.1.0', strategy: 'canary' }));
    expect((await dev.get('/v1/services/can2/canary?env=dev')).body.data.canary.weight).toBe(10); // the default
    for (const weight of [-1, 101, 50.5, '50']) {
      expect((await dev.put('/v1/services/can2/canary/weight?env=dev', { weight })).status, String(weight)).toBe(400);
    }
    expect((await dev.put('/v1/services/can2/canary/weight?env=dev', {})).status).toBe(400);
    const zero = await dev.put('/v1/services/can2/canary/weight?env=dev', { weight: 0 });
    expect(zero.body.data).toMatchObject({ canary_active: true, canary: { weight: 0 } });
    await healthy('can2', 'dev'); // only a ready canary is promoted
    const full = await dev.put('/v1/services/can2/canary/weight?env=dev', { weight: 100 });
    expect(full.body.data).toMatchObject({ canary_active: false, stable: { revision: 'v1.1.0', weight: 100 }, canary: null });
    expect(await history('can2', 'dev')).toEqual([
      ['v1.1.0', 'current'],
      ['v1.0.0', 'previous'],
    ]);
  });

  it('a canary on a service with no current revision is simply deployed', async () => {
    const res = await apply(dev, 'dev', ssd({ name: 'fresh', strategy: 'canary' }));
    expect(res.body.data).toMatchObject({ current_revision: 'v1.0.0', previous_revision: null });
    expect((await dev.get('/v1/services/fresh/canary?env=dev')).body.data.canary_active).toBe(false);
  });
});

describe('a promoted canary is healthy, whenever it is promoted (seed 3.2, 3.5)', () => {
  // The simulated runtime at the speed a new user gets: one replica ready every 200 ms.
  let slow: Stack;
  beforeAll(async () => {
    slow = await startStack({ simReplicaMs: 200 });
  });
  afterAll(() => slow.stop());

  const promoteBy = {
    'POST …/canary/promote': (c: Client, name: string) => c.post(`/v1/services/${name}/canary/promote?env=dev`),
    'PUT …/canary/weight 100': (c: Client, name: string) => c.put(`/v1/services/${name}/canary/weight?env=dev`, { weight: 100 }),
  };
  const read = async (c: Client, name: string) => (await c.get(`/v1/services/${name}?env=dev`)).body.data;

  /** A service at v1.0.0 with every replica ready, then a canary v2.0.0 of `replicas` beside it. */
  async function canaryOf(c: Client, name: string, replicas: number) {
    await apply(c, 'dev', ssd({ name, replicas: 1 }));
    await waitFor(async () => (await read(c, name)).status === 'healthy', `${name} v1.0.0 healthy`);
    const res = await apply(c, 'dev', ssd({ name, tag: '2.0.0', replicas, strategy: 'canary', weight: 20 }));
    expect(res.body.data).toMatchObject({ status: 'deploying', current_revision: 'v1.0.0', replicas: { desired: replicas, ready: 0 } });
  }

  /** What every read shows once the canary is promoted: healthy, all ready, synced, no canary. */
  async function expectPromoted(c: Client, name: string, replicas: number) {
    const promoted = {
      status: 'healthy',
      current_revision: 'v2.0.0',
      previous_revision: 'v1.0.0',
      image: `registry.example.com/platform/${name}:2.0.0`,
      replicas: { desired: replicas, ready: replicas },
      gitops_sync_status: 'Synced',
    };
    const got = await read(c, name);
    expect(got).toMatchObject(promoted);
    expect(got.canary).toBeUndefined();
    expect((await c.get(`/v1/services?env=dev&status=healthy&per_page=200`)).body.data.map((s: any) => s.name)).toContain(name);
    expect((await c.get(`/v1/services/${name}/canary?env=dev`)).body.data).toMatchObject({ canary_active: false, canary: null });
    expect((await c.get(`/v1/services/${name}/revisions?env=dev`)).body.data.map((r: any) => [r.revision, r.status])).toEqual([
      ['v2.0.0', 'current'],
      ['v1.0.0', 'previous'],
    ]);
  }

  it.each(Object.entries(promoteBy))('%s right after the canary is applied: 409 with the replicas ready, nothing changed', async (how, promote) => {
    const name = how.startsWith('POST') ? 'soon-promote' : 'soon-weight';
    await canaryOf(slow.admin, name, 10);
    const refused = await promote(slow.admin, name);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body).toMatchObject({ error: 'conflict', status: 409 });
    expect(refused.body.message).toMatch(new RegExp(`^canary v2\\.0\\.0 of ${name} in dev has \\d of 10 replicas ready; promote it once all are ready$`));
    const after = await read(slow.admin, name);
    expect(after).toMatchObject({
      status: 'deploying',
      current_revision: 'v1.0.0',
      gitops_sync_status: 'OutOfSync',
      canary: { revision: 'v2.0.0', weight: 20 },
    });
    expect(after.replicas.ready).toBeLessThan(10);
    const events = (await slow.admin.get(`/v1/audit/deployments?service=${name}`)).body.data.map((e: any) => e.event);
    expect(events).not.toContain('canary.promoted');
    // The canary keeps rolling out; the same call succeeds once it is ready.
    await waitFor(async () => (await read(slow.admin, name)).status === 'healthy', `${name} canary ready`, 15_000);
    expect((await promote(slow.admin, name)).status).toBe(200);
    await expectPromoted(slow.admin, name, 10);
  });

  it.each(Object.entries(promoteBy))('%s once the canary is ready: healthy in the response and in every read after it', async (how, promote) => {
    const name = how.startsWith('POST') ? 'ready-promote' : 'ready-weight';
    await canaryOf(slow.admin, name, 2);
    await waitFor(async () => (await read(slow.admin, name)).replicas.ready === 2, `${name} canary ready`);
    const res = await promote(slow.admin, name);
    expect(res.status, res.text).toBe(200);
    if (how.startsWith('POST')) {
      expect(res.body.data).toMatchObject({ status: 'healthy', replicas: { desired: 2, ready: 2 }, current_revision: 'v2.0.0', dry_run: false });
    } else {
      expect(res.body.data).toMatchObject({ canary_active: false, stable: { revision: 'v2.0.0', weight: 100 }, canary: null });
    }
    await expectPromoted(slow.admin, name, 2);
  });

  it('a canary rolling out when the server stops resumes, and is promoted only once it is ready', async () => {
    const first = await startStack({ simReplicaMs: 150 });
    await canaryOf(first.admin, 'resumed-canary', 6);
    await waitFor(async () => (await read(first.admin, 'resumed-canary')).replicas.ready >= 2, 'two canary replicas');
    await first.stopServer();
    const second = await startStack({ dataDir: first.dataDir, simReplicaMs: 150 });
    try {
      const refused = await second.admin.post('/v1/services/resumed-canary/canary/promote?env=dev');
      expect(refused.status, refused.text).toBe(409);
      expect(refused.body.message).toMatch(/has [2-5] of 6 replicas ready/);
      expect(await read(second.admin, 'resumed-canary')).toMatchObject({ status: 'deploying', canary: { revision: 'v2.0.0' } });
      await waitFor(async () => (await read(second.admin, 'resumed-canary')).status === 'healthy', 'the canary to finish after the restart');
      const promoted = await second.admin.post('/v1/services/resumed-canary/canary/promote?env=dev');
      expect(promoted.body.data).toMatchObject({ status: 'healthy', replicas: { desired: 6, ready: 6 } });
      await expectPromoted(second.admin, 'resumed-canary', 6);
    } finally {
      await second.stop();
      await first.stop();
    }
  });
});

describe('lists and paging', () => {
  it('lists services per environment with status filter and paging bounds', async () => {
    for (const name of ['page-a', 'page-b', 'page-c']) await apply(dev, 'staging', ssd({ name }));
    const all = await dev.get('/v1/services?env=staging&per_page=200');
    expect(all.body.meta).toMatchObject({ page: 1, per_page: 200 });
    const names = all.body.data.map((s: { name: string }) => s.name);
    expect(names).toEqual([...names].sort());
    expect(names).toEqual(expect.arrayContaining(['page-a', 'page-b', 'page-c']));
    const second = await dev.get('/v1/services?env=staging&per_page=1&page=2');
    expect(second.body.data).toHaveLength(1);
    expect(second.body.meta).toEqual({ page: 2, per_page: 1, total: all.body.meta.total });
    expect((await dev.get('/v1/services?env=staging&page=999')).body.data).toEqual([]);
    await healthy('page-c', 'staging');
    const healthyOnes = await dev.get('/v1/services?env=staging&status=healthy');
    expect(healthyOnes.body.data.every((s: { status: string }) => s.status === 'healthy')).toBe(true);
    for (const q of ['per_page=0', 'per_page=201', 'page=0', 'status=sleeping']) {
      expect((await dev.get(`/v1/services?env=staging&${q}`)).status, q).toBe(400);
    }
    expect((await dev.get('/v1/services?env=staging')).body.meta.per_page).toBe(50);
  });

  it('revision history pages at most 100, default 20', async () => {
    for (let i = 0; i < 3; i++) await apply(dev, 'dev', ssd({ name: 'hist', tag: `1.0.${i}` }));
    const page = await dev.get('/v1/services/hist/revisions?env=dev&per_page=2&page=2');
    expect(page.body.data.map((r: { revision: string }) => r.revision)).toEqual(['v1.0.0']);
    expect(page.body.meta).toEqual({ page: 2, per_page: 2, total: 3 });
    expect((await dev.get('/v1/services/hist/revisions?env=dev')).body.meta.per_page).toBe(20);
    expect((await dev.get('/v1/services/hist/revisions?env=dev&per_page=100')).status).toBe(200);
    expect((await dev.get('/v1/services/hist/revisions?env=dev&per_page=101')).status).toBe(400);
    expect((await dev.get('/v1/services/hist/revisions')).status).toBe(400);
  });
});

describe('logs and what the simulated runtime leaves out', () => {
  it('logs: an empty array (the simulated runtime runs nothing), developer+, lines 1-1000; no endpoint, per-revision counts or message', async () => {
    await apply(dev, 'dev', ssd({ name: 'logged', replicas: 1 }));
    const done = await healthy('logged', 'dev');
    // the simulated runtime runs no ingress and reports no per-revision readiness; nothing failed
    expect(done).not.toHaveProperty('endpoint');
    expect(done.replicas).toEqual({ desired: 1, ready: 1 });
    expect(done).not.toHaveProperty('status_message');
    const res = await dev.get('/v1/services/logged/logs?env=dev&lines=5');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([]);
    expect((await dev.get('/v1/services/logged/logs?env=dev')).body.data).toEqual([]); // lines: default 100
    expect((await dev.get('/v1/services/logged/logs?env=dev&lines=1000')).status).toBe(200);
    for (const q of ['lines=0', 'lines=1001', 'lines=ten', 'since=1h']) {
      const bad = await dev.get(`/v1/services/logged/logs?env=dev&${q}`);
      expect(bad.status, q).toBe(400);
    }
    expect((await dev.get('/v1/services/logged/logs')).status).toBe(400); // no env
    expect((await dev.get('/v1/services/nope/logs?env=dev')).status).toBe(404);
    expect((await dev.get('/v1/services/logged/logs?env=prod')).status).toBe(404);
    expect((await none.get('/v1/services/logged/logs?env=dev')).status).toBe(403);
  });
});

describe('restart', () => {
  it('a rollout under way when the server stops resumes when it starts again', async () => {
    const first = await startStack({ simReplicaMs: 150 });
    const dataDir = first.dataDir;
    await apply(first.admin, 'dev', ssd({ name: 'resume', replicas: 6 }));
    await waitFor(async () => (await first.admin.get('/v1/services/resume?env=dev')).body.data.replicas.ready >= 2, 'two replicas');
    await first.stopServer();
    const second = await startStack({ dataDir, simReplicaMs: 20 });
    try {
      const mid = (await second.admin.get('/v1/services/resume?env=dev')).body.data;
      expect(mid.status).toBe('deploying');
      expect(mid.replicas.ready).toBeGreaterThanOrEqual(2);
      expect(mid.replicas.ready).toBeLessThan(6);
      const done = await waitFor(async () => {
        const s = (await second.admin.get('/v1/services/resume?env=dev')).body.data;
        return s.status === 'healthy' && s;
      }, 'the rollout to finish after the restart');
      expect(done).toMatchObject({ replicas: { desired: 6, ready: 6 }, gitops_sync_status: 'Synced' });
    } finally {
      await second.stop();
      await first.stop();
    }
  });
});
