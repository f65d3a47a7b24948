/**
 * `tether fleet groups …` and `tether fleet vehicles …` (docs/cli.md) as users run them: the real
 * `dist/tether.cjs` against a real server, the tenant from `--tenant` or the token, outcomes
 * checked through the fleet API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTether } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';

let stack: Stack;
let configHome: string;
let acme: string; // fleet:read + fleet:write, tenant acme only
let both: string; // tenants acme and globex
let none: string; // fleet scopes, no tenant

const VIN = (n: number) => `1HGCM82633A${String(n).padStart(6, '0')}`;

async function fleetToken(username: string, tenants: string[]) {
  await stack.admin.post('/v1/users', { username, role: null, kind: 'service' });
  return (await stack.admin.post('/v1/tokens', { username, scopes: ['fleet:read', 'fleet:write'], tenants })).body.data.token as string;
}

beforeAll(async () => {
  stack = await startStack();
  configHome = tempDir('tether-fleet-config-');
  acme = await fleetToken('cf-acme', ['acme']);
  both = await fleetToken('cf-both', ['acme', 'globex']);
  none = await fleetToken('cf-none', []);
});
afterAll(() => stack.stop());

/** `tether ARGS` with `token`. */
const tether = (token: string, args: string[]) => runTether(args, { XDG_CONFIG_HOME: configHome, TETHER_SERVER: stack.url, TETHER_TOKEN: token });

/** A fleet API read in `tenant`, as the administrator (granted every tenant). */
const fleet = async (tenant: string, path: string) => (await stack.admin.get(path, { 'x-tenant-id': tenant })).body;

const groupsOf = async (tenant: string) => (await fleet(tenant, '/v1/fleet/groups?limit=100')).data.groups as Array<{ group_id: string; name: string }>;

describe('the tenant', () => {
  it("is the token's only tenant without --tenant; --tenant picks one of several", async () => {
    const created = await tether(acme, ['fleet', 'groups', 'create', 'Tenant Probe', '--json']);
    expect(created.code).toBe(0);
    const group = JSON.parse(created.stdout);
    expect((await groupsOf('acme')).map((g) => g.group_id)).toContain(group.group_id);

    const globex = await tether(both, ['fleet', 'groups', 'create', 'Globex Trucks', '--tenant', 'globex']);
    expect(globex).toMatchObject({ code: 0, stdout: expect.stringMatching(/^created group grp_\w+ "Globex Trucks" in tenant globex$/) });
    expect((await groupsOf('globex')).map((g) => g.name)).toEqual(['Globex Trucks']);
    expect((await groupsOf('acme')).map((g) => g.name)).not.toContain('Globex Trucks');
  });

  it('is a usage mistake (exit 2) when the token has several, every one or none; another tenant is refused with its code', async () => {
    expect(await tether(both, ['fleet', 'groups', 'list'])).toMatchObject({
      code: 2,
      stderr: 'tether: this token is granted tenants acme, globex; name one with --tenant',
    });
    expect(await tether(stack.adminToken, ['fleet', 'groups', 'list'])).toMatchObject({
      code: 2,
      stderr: 'tether: this token is granted every tenant; name one with --tenant',
    });
    expect(await tether(none, ['fleet', 'vehicles', 'register', VIN(1)])).toMatchObject({ code: 2, stderr: expect.stringContaining('granted no tenant') });
    expect(await tether(acme, ['fleet', 'groups', 'list', '--tenant', 'globex'])).toMatchObject({
      code: 1,
      stderr: 'tether: this token is not granted tenant globex (TENANT_FORBIDDEN)',
    });
    const admin = await tether(stack.adminToken, ['fleet', 'groups', 'list', '--tenant', 'globex']);
    expect(admin.stdout).toMatch(/Globex Trucks/);
  });
});

describe('fleet groups', () => {
  it('create, list and show (by id or name), with --json as the API data; errors carry the fleet code', async () => {
    const res = await tether(acme, [
      'fleet',
      'groups',
      'create',
      'Berlin Vans',
      '--description',
      'last mile',
      '--region',
      'eu-central-1',
      '--tag',
      'ev',
      '--tag',
      'city',
    ]);
    expect(res.code).toBe(0);
    const id = /grp_\w+/.exec(res.stdout)![0];
    const api = (await fleet('acme', `/v1/fleet/groups/${id}`)).data;
    expect(api).toMatchObject({ name: 'Berlin Vans', description: 'last mile', region: 'eu-central-1', tags: ['ev', 'city'], created_by: 'cf-acme' });

    const list = await tether(acme, ['fleet', 'groups', 'list']);
    const lines = list.stdout.split('\n');
    expect(lines[0]).toMatch(/^GROUP\s+NAME\s+REGION\s+VEHICLES\s+TAGS$/);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${id}\\s+Berlin Vans\\s+eu-central-1\\s+0\\s+ev,city$`)));
    expect(JSON.parse((await tether(acme, ['fleet', 'groups', 'list', '--json'])).stdout)).toEqual(await groupsOf('acme'));

    for (const ref of [id, 'berlin vans']) {
      const show = await tether(acme, ['fleet', 'groups', 'show', ref]);
      expect(show.code, ref).toBe(0);
      expect(show.stdout).toMatch(new RegExp(`^group +${id}$`, 'm'));
      expect(show.stdout).toMatch(/^name +Berlin Vans$/m);
      expect(show.stdout).toMatch(/^tenant +acme$/m);
    }
    expect(JSON.parse((await tether(acme, ['fleet', 'groups', 'show', id, '--json'])).stdout)).toEqual(api);

    expect(await tether(acme, ['fleet', 'groups', 'create', ' BERLIN VANS '])).toMatchObject({
      code: 1,
      stderr: 'tether: a group named "BERLIN VANS" exists in this tenant (GROUP_NAME_CONFLICT)',
    });
    expect(await tether(acme, ['fleet', 'groups', 'show', 'grp_nope'])).toMatchObject({
      code: 1,
      stderr: 'tether: no group grp_nope in this tenant (GROUP_NOT_FOUND)',
    });
    expect(await tether(acme, ['fleet', 'groups', 'show', 'Nowhere'])).toMatchObject({
      code: 1,
      stderr: 'tether: no group named "Nowhere" in tenant acme (GROUP_NOT_FOUND)',
    });
    const invalid = await tether(acme, ['fleet', 'groups', 'create', 'Bad Region', '--region', 'EU Central']);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr.split('\n')).toEqual(['tether: invalid request (VALIDATION_ERROR):', expect.stringMatching(/^ {2}region: /)]);
  });
});

describe('fleet vehicles', () => {
  it('register (into a group), assign and list --group, as the fleet API then shows them', async () => {
    const group = JSON.parse((await tether(acme, ['fleet', 'groups', 'create', 'Hamburg Trucks', '--json'])).stdout).group_id as string;
    const other = JSON.parse((await tether(acme, ['fleet', 'groups', 'create', 'Munich Trucks', '--json'])).stdout).group_id as string;
    await stack.addDevice('cf-unit-1');

    const first = await tether(acme, ['fleet', 'vehicles', 'register', VIN(10), '--id', 'veh_truck1', '--device', 'cf-unit-1', '--group', 'Hamburg Trucks']);
    expect(first).toMatchObject({
      code: 0,
      stdout: `registered vehicle veh_truck1 (VIN ${VIN(10)}) in tenant acme, with device cf-unit-1, in group ${group} "Hamburg Trucks"`,
    });
    const second = JSON.parse((await tether(acme, ['fleet', 'vehicles', 'register', VIN(11), '--json'])).stdout);
    expect(second).toMatchObject({ vehicle_id: expect.stringMatching(/^veh_/), vin: VIN(11), group_id: null, device_id: null });

    const assigned = await tether(acme, ['fleet', 'vehicles', 'assign', second.vehicle_id, '--group', group]);
    expect(assigned).toMatchObject({ code: 0, stdout: `assigned vehicle ${second.vehicle_id} (VIN ${VIN(11)}) to group ${group} "Hamburg Trucks"` });
    const members = (await fleet('acme', `/v1/fleet/groups/${group}/vehicles`)).data;
    expect(members.vehicles.map((v: { vehicle_id: string }) => v.vehicle_id).sort()).toEqual(['veh_truck1', second.vehicle_id].sort());
    expect((await fleet('acme', `/v1/fleet/groups/${group}`)).data.vehicle_count).toBe(2);

    const list = await tether(acme, ['fleet', 'vehicles', 'list', '--group', 'hamburg trucks']);
    expect(list.stdout.split('\n')).toEqual([
      expect.stringMatching(/^VEHICLE\s+VIN\s+STATUS\s+DEVICE$/),
      ...members.vehicles.map((v: { vehicle_id: string; vin: string; device_id: string | null }) =>
        expect.stringMatching(new RegExp(`^${v.vehicle_id}\\s+${v.vin}\\s+active\\s+${v.device_id ?? '-'}$`)),
      ),
    ]);
    expect(list.stdout).toMatch(new RegExp(`^veh_truck1\\s+${VIN(10)}\\s+active\\s+cf-unit-1$`, 'm'));
    expect(JSON.parse((await tether(acme, ['fleet', 'vehicles', 'list', '--group', group, '--json'])).stdout)).toEqual(members.vehicles);

    // moving it: both counts follow
    await tether(acme, ['fleet', 'vehicles', 'assign', 'veh_truck1', '--group', other]);
    expect((await fleet('acme', `/v1/fleet/groups/${group}`)).data.vehicle_count).toBe(1);
    expect((await tether(acme, ['fleet', 'vehicles', 'list', '--group', other])).stdout).toMatch(/^veh_truck1\s/m);
    expect((await tether(acme, ['fleet', 'vehicles', 'list', '--group', 'Empty Nowhere'])).code).toBe(1);
  });

  it('usage mistakes exit 2; refusals exit 1 with the fleet code and register nothing', async () => {
    expect((await tether(acme, ['fleet', 'vehicles', 'list', '--group', 'x', '--unassigned'])).code).toBe(2);
    expect((await tether(acme, ['fleet', 'vehicles', 'assign', 'veh_x'])).code).toBe(2);

    const badVin = await tether(acme, ['fleet', 'vehicles', 'register', 'NOT-A-VIN']);
    expect(badVin.code).toBe(1);
    expect(badVin.stderr).toContain('tether: invalid request (VALIDATION_ERROR):\n  vin: must be 17 characters');

    const noGroup = await tether(acme, ['fleet', 'vehicles', 'register', VIN(20), '--group', 'No Such Group']);
    expect(noGroup).toMatchObject({ code: 1, stderr: 'tether: no group named "No Such Group" in tenant acme (GROUP_NOT_FOUND)' });
    expect(await tether(acme, ['fleet', 'vehicles', 'register', VIN(20), '--json'])).toMatchObject({ code: 0 }); // the VIN was still free

    expect(await tether(acme, ['fleet', 'vehicles', 'register', VIN(20)])).toMatchObject({ code: 1, stderr: expect.stringMatching(/\(VEHICLE_CONFLICT\)$/) });
    const groups = await groupsOf('acme');
    expect(await tether(acme, ['fleet', 'vehicles', 'assign', 'veh_nope', '--group', groups[0]!.group_id])).toMatchObject({
      code: 1,
      stderr: 'tether: no vehicle veh_nope in this tenant (VEHICLE_NOT_FOUND)',
    });
  });
});

describe('fleet vehicles by VIN, unassign, rm and the lists without a group', () => {
  it('assign, unassign and rm take a VIN (in either case) as well as an id; lists show the device and the group', async () => {
    const group = JSON.parse((await tether(acme, ['fleet', 'groups', 'create', 'VIN Vans', '--json'])).stdout).group_id as string;
    await stack.addDevice('cf-unit-9');
    await tether(acme, ['fleet', 'vehicles', 'register', VIN(30), '--id', 'veh_vin30', '--device', 'cf-unit-9']);
    await tether(acme, ['fleet', 'vehicles', 'register', VIN(31), '--id', 'veh_vin31']);

    expect(await tether(acme, ['fleet', 'vehicles', 'assign', VIN(30), '--group', 'VIN Vans'])).toMatchObject({
      code: 0,
      stdout: `assigned vehicle veh_vin30 (VIN ${VIN(30)}) to group ${group} "VIN Vans"`,
    });
    expect(await tether(acme, ['fleet', 'vehicles', 'assign', VIN(31).toLowerCase(), '--group', group])).toMatchObject({ code: 0 });
    expect((await fleet('acme', `/v1/fleet/groups/${group}`)).data.vehicle_count).toBe(2);

    const all = await tether(acme, ['fleet', 'vehicles', 'list']);
    expect(all.stdout.split('\n')[0]).toMatch(/^VEHICLE\s+VIN\s+STATUS\s+DEVICE\s+GROUP$/);
    expect(all.stdout).toMatch(new RegExp(`^veh_vin30\\s+${VIN(30)}\\s+active\\s+cf-unit-9\\s+${group}$`, 'm'));
    expect(all.stdout).toMatch(new RegExp(`^veh_vin31\\s+${VIN(31)}\\s+active\\s+-\\s+${group}$`, 'm'));

    expect(await tether(acme, ['fleet', 'vehicles', 'unassign', VIN(30)])).toMatchObject({
      code: 0,
      stdout: `took vehicle veh_vin30 (VIN ${VIN(30)}) out of group ${group}`,
    });
    expect(await tether(acme, ['fleet', 'vehicles', 'unassign', 'veh_vin30'])).toMatchObject({
      code: 0,
      stdout: `vehicle veh_vin30 (VIN ${VIN(30)}) is in no group`,
    });
    expect((await fleet('acme', `/v1/fleet/groups/${group}`)).data.vehicle_count).toBe(1);

    const unassigned = await tether(acme, ['fleet', 'vehicles', 'list', '--unassigned']);
    expect(unassigned.stdout).toMatch(new RegExp(`^veh_vin30\\s+${VIN(30)}\\s+active\\s+cf-unit-9\\s+-$`, 'm'));
    expect(unassigned.stdout).not.toMatch(/veh_vin31/);
    const api = (await fleet('acme', '/v1/fleet/vehicles?unassigned=true&limit=100')).data.vehicles;
    expect(JSON.parse((await tether(acme, ['fleet', 'vehicles', 'list', '--unassigned', '--json'])).stdout)).toEqual(api);

    // rm: asks unless --yes (no terminal here: a usage mistake), then deletes; the group counts one fewer
    expect(await tether(acme, ['fleet', 'vehicles', 'rm', VIN(31)])).toMatchObject({ code: 2, stderr: expect.stringContaining('add --yes') });
    expect((await fleet('acme', '/v1/fleet/vehicles/veh_vin31')).status).toBe('success');
    expect(await tether(acme, ['fleet', 'vehicles', 'rm', VIN(31), '--yes'])).toMatchObject({
      code: 0,
      stdout: `deleted vehicle veh_vin31 (VIN ${VIN(31)}); it was in group ${group}`,
    });
    expect((await fleet('acme', `/v1/fleet/groups/${group}`)).data.vehicle_count).toBe(0);
    expect(JSON.parse((await tether(acme, ['fleet', 'vehicles', 'rm', 'veh_vin30', '--yes', '--json'])).stdout)).toEqual({
      vehicle_id: 'veh_vin30',
      vin: VIN(30),
      group_id: null,
      deleted: true,
    });
    expect((await fleet('acme', '/v1/fleet/vehicles/veh_vin30')).error.code).toBe('VEHICLE_NOT_FOUND');
  });

  it("an unknown VIN or id is VEHICLE_NOT_FOUND in the tenant; another tenant's VIN is not found either", async () => {
    await tether(both, ['fleet', 'vehicles', 'register', VIN(40), '--id', 'veh_globex40', '--tenant', 'globex']);
    for (const args of [
      ['assign', VIN(40), '--group', 'VIN Vans'],
      ['unassign', VIN(40)],
      ['rm', VIN(40), '--yes'],
    ]) {
      expect(await tether(acme, ['fleet', 'vehicles', ...args])).toMatchObject({
        code: 1,
        stderr: `tether: no vehicle with VIN ${VIN(40)} in tenant acme (VEHICLE_NOT_FOUND)`,
      });
    }
    expect(await tether(acme, ['fleet', 'vehicles', 'rm', 'veh_globex40', '--yes'])).toMatchObject({
      code: 1,
      stderr: 'tether: no vehicle veh_globex40 in this tenant (VEHICLE_NOT_FOUND)',
    });
    expect((await fleet('globex', '/v1/fleet/vehicles/veh_globex40')).data.vin).toBe(VIN(40));
  });
});
