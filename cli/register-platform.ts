/**
 * @module The client commands that manage the platform (docs/cli.md): `device`, `deploy`
 * (services per environment), `fleet` (groups and vehicles of a tenant) and `completion`.
 * Each command's module loads only when that command runs.
 */
import { Argument, Command, InvalidArgumentError, Option } from 'commander';
import { withCode } from './api-client';
import type { Context } from './context';

const commands = {
  completion: () => import('./commands/completion'),
  deploy: () => import('./commands/deploy'),
  device: () => import('./commands/device'),
  fleet: () => import('./commands/fleet'),
};

const ENVIRONMENTS = ['dev', 'staging', 'prod'];
const jsonOption = () => new Option('--json', 'print the answer as JSON');
const yesOption = () => new Option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)');
const envOption = () => new Option('--env <env>', 'the environment').choices(ENVIRONMENTS).makeOptionMandatory();
const tenantOption = () => new Option('--tenant <tenant>', "the tenant (default: the token's only tenant)");

function weight(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 100) throw new InvalidArgumentError('the weight is a whole number from 0 to 100 (0 halts, 100 promotes)');
  return Number(value);
}

function revision(value: string): string {
  if (!/^v\d+\.\d+\.\d+$/.test(value)) throw new InvalidArgumentError('a revision looks like v1.4.2');
  return value;
}

function lines(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 1000) throw new InvalidArgumentError('a whole number of lines from 1 to 1000');
  return Number(value);
}

function seconds(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('a whole number of seconds, at least 1');
  return Number(value);
}

const APPLY_HELP = `
FILE is a service spec in YAML (docs/http-api.md, deployments); - reads it from standard input.
It prints what the apply changed (revision, image, replicas, traffic); an invalid spec prints
every problem as PATH: message (line N) and changes nothing.

Examples:
  tether deploy apply -f web.yaml --env staging --dry-run   check it and see what would change
  tether deploy apply -f web.yaml --env staging --wait      apply it and wait until it is healthy
`;

function registerDevice(program: Command, ctx: () => Context): void {
  const device = program.command('device').description('manage devices');
  device
    .command('add <device-id>')
    .description('register a device and print its agent token and the command that starts its agent')
    .option('--label <key=value...>', 'labels for the device')
    .addOption(jsonOption())
    .action(withCode(async (id, o) => (await commands.device()).deviceAdd(ctx(), id, o)));
  device
    .command('list')
    .description('every device, with its agent status, when it was last seen, its agent version and labels')
    .addOption(new Option('--status <status>', 'only devices whose agent is online or offline').choices(['online', 'offline']))
    .addOption(jsonOption())
    .action(withCode(async (o) => (await commands.device()).deviceList(ctx(), o)));
  device
    .command('show <device-id>')
    .description('one device: its agent status, versions, labels and what its agent forwards to')
    .addOption(jsonOption())
    .action(withCode(async (id, o) => (await commands.device()).deviceShow(ctx(), id, o)));
  device
    .command('rm <device-id>')
    .description('delete a device (administrators): its open sessions close and its agent is disconnected')
    .addOption(yesOption())
    .addOption(jsonOption())
    .action(withCode(async (id, o) => (await commands.device()).deviceRemove(ctx(), id, o)));
  device
    .command('rotate-token <device-id>')
    .description('issue a new agent token (administrators); the old one stops working and its agent is disconnected')
    .addOption(jsonOption())
    .action(withCode(async (id, o) => (await commands.device()).deviceRotateToken(ctx(), id, o)));
}

function registerCanary(deploy: Command, ctx: () => Context): void {
  const canary = deploy.command('canary').description("a service's canary: its traffic weight, halting and promoting it");
  canary
    .command('get <service>')
    .description('the stable and canary revisions and the traffic each takes')
    .addOption(envOption())
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).canaryGet(ctx(), name, o)));
  canary
    .command('weight')
    .description("set the canary's share of traffic (0 halts it, 100 promotes it)")
    .argument('<service>')
    .addArgument(new Argument('<weight>', 'a whole number from 0 to 100').argParser(weight))
    .addOption(envOption())
    .addOption(jsonOption())
    .action(withCode(async (name, w, o) => (await commands.deploy()).canaryWeight(ctx(), name, w, o)));
  canary
    .command('halt <service>')
    .description('send no traffic to the canary (weight 0); the stable revision takes it all')
    .addOption(envOption())
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).canaryHalt(ctx(), name, o)));
  canary
    .command('promote <service>')
    .description('make the canary the current revision with all traffic, once all its replicas are ready')
    .addOption(envOption())
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).canaryPromote(ctx(), name, o)));
}

function registerDeploy(program: Command, ctx: () => Context): void {
  const deploy = program.command('deploy').description('deploy services from specs, per environment: apply, roll back, canaries');
  deploy
    .command('apply')
    .description('apply a service spec and say what changed; --dry-run only checks it')
    .addOption(new Option('-f, --file <file>', 'the service spec (YAML); - for standard input').makeOptionMandatory())
    .addOption(envOption())
    .option('--dry-run', 'validate and show what would change, changing nothing')
    .option('--wait', 'wait until the rollout is healthy (exit 1 if it fails)')
    .option('--timeout <seconds>', 'with --wait: give up after this long (default 600)', seconds)
    .addOption(jsonOption())
    .addHelpText('after', APPLY_HELP)
    .action(withCode(async (o) => (await commands.deploy()).deployApply(ctx(), o)));
  deploy
    .command('list')
    .description('services with their status, revisions and readiness (every environment unless --env)')
    .addOption(new Option('--env <env>', 'only this environment').choices(ENVIRONMENTS))
    .addOption(new Option('--status <status>', 'only services in this state').choices(['deploying', 'healthy', 'degraded', 'failed']))
    .addOption(jsonOption())
    .action(withCode(async (o) => (await commands.deploy()).deployList(ctx(), o)));
  deploy
    .command('get <service>')
    .description('one service: status (and why a rollout failed), revisions, canary split, ready replicas per revision, endpoint, image, sync')
    .addOption(envOption())
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).deployGet(ctx(), name, o)));
  deploy
    .command('history <service>')
    .description("a service's revisions, newest first: which is current, which previous")
    .addOption(envOption())
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).deployHistory(ctx(), name, o)));
  deploy
    .command('rollback <service>')
    .description('deploy an earlier revision again (default: the previous one); drops a canary')
    .addOption(envOption())
    .option('--revision <revision>', 'the revision to go back to, e.g. v1.4.1', revision)
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).deployRollback(ctx(), name, o)));
  deploy
    .command('logs <service>')
    .description("the recent log lines of the service's replicas, each after its replica's name")
    .addOption(envOption())
    .option('--lines <n>', 'lines per replica, 1 to 1000 (default 100)', lines)
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).deployLogs(ctx(), name, o)));
  registerCanary(deploy, ctx);
  deploy
    .command('rm <service>')
    .description('delete a service from an environment: its replicas stop (platform engineers)')
    .addOption(envOption())
    .addOption(yesOption())
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.deploy()).deployRemove(ctx(), name, o)));
}

function registerFleet(program: Command, ctx: () => Context): void {
  const fleet = program.command('fleet').description("a tenant's vehicle fleet: groups and vehicles");
  const groups = fleet.command('groups').description('groups of vehicles');
  groups
    .command('list')
    .description("the tenant's groups, with their region and number of vehicles")
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (o) => (await commands.fleet()).groupList(ctx(), o)));
  groups
    .command('create <name>')
    .description('create a group (its name unique in the tenant, ignoring case)')
    .option('--description <text>', 'what the group is for')
    .option('--region <region>', 'a region name, e.g. eu-central-1')
    .option('--tag <tag...>', 'tags')
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (name, o) => (await commands.fleet()).groupCreate(ctx(), name, o)));
  groups
    .command('show <group>')
    .description('one group, by id (grp_…) or name')
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (group, o) => (await commands.fleet()).groupShow(ctx(), group, o)));

  const vehicles = fleet.command('vehicles').description('vehicles and the groups they are in');
  vehicles
    .command('register <vin>')
    .description('register a vehicle by its VIN (17 characters)')
    .option('--id <vehicle-id>', 'its id, veh_ and lower-case letters and digits (default: a new one)')
    .option('--device <device-id>', 'the registered device in it')
    .option('--group <group>', 'and put it in this group (id or name)')
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (vin, o) => (await commands.fleet()).vehicleRegister(ctx(), vin, o)));
  vehicles
    .command('assign <vehicle>')
    .description('put a vehicle (id veh_… or VIN) in a group, moving it out of the one it was in')
    .addOption(new Option('--group <group>', 'the group (id or name)').makeOptionMandatory())
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (id, o) => (await commands.fleet()).vehicleAssign(ctx(), id, o)));
  vehicles
    .command('unassign <vehicle>')
    .description('take a vehicle (id veh_… or VIN) out of its group')
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (id, o) => (await commands.fleet()).vehicleUnassign(ctx(), id, o)));
  vehicles
    .command('rm <vehicle>')
    .description('delete a vehicle (id veh_… or VIN); its id and VIN may be registered again')
    .addOption(yesOption())
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (id, o) => (await commands.fleet()).vehicleRemove(ctx(), id, o)));
  vehicles
    .command('list')
    .description("the tenant's vehicles with their device and group; --group: one group's, --unassigned: those in none")
    .option('--group <group>', 'only the vehicles of this group (id or name)')
    .option('--unassigned', 'only the vehicles in no group')
    .addOption(tenantOption())
    .addOption(jsonOption())
    .action(withCode(async (o) => (await commands.fleet()).vehicleList(ctx(), o)));
}

const COMPLETION_HELP = `
Load it in your shell:
  bash  source <(tether completion bash)                       (in ~/.bashrc)
  zsh   source <(tether completion zsh)                        (in ~/.zshrc, after compinit)
  fish  tether completion fish > ~/.config/fish/completions/tether.fish
`;

/** Adds `device …`, `deploy …`, `fleet …` and `completion`. */
export function registerPlatformCommands(program: Command, ctx: () => Context): void {
  registerDevice(program, ctx);
  registerDeploy(program, ctx);
  registerFleet(program, ctx);
  program
    .command('completion')
    .description('print a completion script for your shell (every command, option and choice)')
    .addArgument(new Argument('<shell>', 'bash, zsh or fish').choices(['bash', 'zsh', 'fish']))
    .addHelpText('after', COMPLETION_HELP)
    .action(async (shell) => (await commands.completion()).completion(ctx(), program, shell));
  program
    .command('__complete-devices', { hidden: true })
    .description('the device ids the completion scripts offer')
    .action(async () => (await commands.completion()).completeDevices(ctx()));
}
