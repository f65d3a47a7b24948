/**
 * @module The `tether access …` and `tether webhook …` commands (docs/cli.md, Access requests;
 * CONTRACT 10.3): their arguments, options and help. Each command's module loads only when it
 * runs; the choices offered (protocols, statuses, events) are Records of the interface's types,
 * so that a value added there must be added here too.
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { AccessRequestStatus } from '../shared/api/access';
import type { WebhookEventName } from '../shared/api/webhooks';
import type { SessionProtocol } from '../shared/protocol/control-channel';
import { withCode } from './api-client';
import type { Context } from './context';

const commands = {
  access: () => import('./commands/access'),
  policy: () => import('./commands/access-policy'),
  webhook: () => import('./commands/webhook'),
};

const PROTOCOLS: Record<SessionProtocol, true> = { diagnostics: true, shell: true, 'file-transfer': true, 'port-forward': true };
const STATUSES: Record<AccessRequestStatus, true> = { pending: true, approved: true, denied: true, canceled: true, expired: true, revoked: true, ended: true };
const EVENTS: Record<WebhookEventName, true> = {
  'access_request.created': true,
  'access_request.approved': true,
  'access_request.denied': true,
  'access_request.canceled': true,
  'access_request.expired': true,
  'access_request.revoked': true,
  'session.opened': true,
  'session.closed': true,
  'session.expired': true,
  'session.joined': true,
  'session.extended': true,
  'recording.viewed': true,
  'job.created': true,
  'job.canceled': true,
  'job.aborted': true,
  'job.completed': true,
  'login.succeeded': true,
  'login.failed': true,
  'user.created': true,
  'user.role_changed': true,
  'user.disabled': true,
  'user.enabled': true,
  'user.deleted': true,
  'user.password_changed': true,
  'token.created': true,
  'token.revoked': true,
  'device.created': true,
  'device.deleted': true,
  'device.token_rotated': true,
  'policy.created': true,
  'policy.deleted': true,
  'webhook.created': true,
  'webhook.deleted': true,
};

const jsonOption = () => new Option('--json', 'print the answer as JSON');
const yesOption = () => new Option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)');

/** An option given once per value (`--protocol shell --protocol diagnostics`), each one of `choices`. */
function repeatable(flags: string, description: string, choices: string[]): Option {
  const option = new Option(flags, description).choices(choices);
  return option.argParser((value: string, previous: string[] | undefined) => {
    if (!choices.includes(value)) throw new InvalidArgumentError(`Allowed choices are ${choices.join(', ')}.`);
    return [...(previous ?? []), value];
  });
}

const collect = (value: string, previous?: string[]): string[] => [...(previous ?? []), value];

function limit(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > 200) throw new InvalidArgumentError('a whole number from 1 to 200');
  return Number(value);
}

const REQUEST_HELP = `
A device that an access policy names (tether access policy list) needs an approved request
before a session of the policy's protocols opens on it, for everyone, administrators included.
The request waits (pending) until an administrator other than you approves or denies it, or it
expires (the server's TETHER_ACCESS_REQUEST_TTL_SECONDS, default 24 h). The grant runs from the
approval for --duration (default and most: the policy's maximum); sessions opened under it end
with it.

DURATION: 90s, 30m, 1h, 2d, or seconds (at least 60).

With --wait it waits for the decision and says it: "approved by bob until 14:05 (reason)" exit 0,
"denied by bob: reason" exit 1, "expired: …" exit 1. Ctrl-C stops waiting (exit 130); the
request stays pending until tether access cancel ID.

Example:
  tether access request cam-7 --protocol shell --reason "INC-4411: telemetry stopped" --duration 30m --wait
`;

const POLICY_HELP = `
Example: shells and file transfers on every device labelled env=prod need an approved request,
granted for at most 8 hours:
  tether access policy add prod-shell --label env=prod --protocol shell --protocol file-transfer --max-duration 8h
`;

const WEBHOOK_HELP = `
Each delivery is POST URL with the JSON {id, event, at, data} (--format slack: a body Slack's
incoming webhooks show), headers X-Tether-Event, X-Tether-Delivery and
X-Tether-Signature: sha256=<hex HMAC-SHA256 of the raw body with the secret>. It is retried with
backoff until a 2xx, for up to 24 hours, across restarts (tether webhook deliveries ID).

Example:
  openssl rand -hex 32 > hook.secret
  tether webhook add https://hooks.example.com/tether --event access_request.created \\
      --event access_request.approved --secret-stdin < hook.secret
`;

function registerAccess(program: Command, ctx: () => Context, setExit: (code: number) => void): void {
  const access = program.command('access').description('access requests: ask for, approve, deny and revoke access to devices a policy protects');
  access
    .command('request <device>')
    .description('ask for access to a device that a policy protects; --wait waits for the decision (exit 0 approved, 1 otherwise)')
    .addOption(repeatable('--protocol <protocol>', 'a protocol to ask for (repeat for more)', Object.keys(PROTOCOLS)).makeOptionMandatory())
    .requiredOption('--reason <text>', 'why (1 to 500 characters), for the reviewer and the audit')
    .option('--duration <duration>', "how long the grant runs once approved (default: the policy's maximum)")
    .option('--wait', 'wait for the decision and say it')
    .addOption(jsonOption())
    .addHelpText('after', REQUEST_HELP)
    .action(withCode(async (device: string, o) => setExit(await (await commands.access()).accessRequest(ctx(), device, o))));
  access
    .command('list')
    .description('access requests, newest first (yours; administrators: everyone’s)')
    .addOption(new Option('--status <status>', 'only requests in this state').choices(Object.keys(STATUSES)))
    .option('--device <device>', 'only requests for this device')
    .option('--requester <user>', 'only requests of this user')
    .addOption(jsonOption())
    .action(withCode(async (o) => (await commands.access()).accessList(ctx(), o)));
  access
    .command('show <request-id>')
    .description('one access request: what, why, who reviewed it, the grant')
    .addOption(jsonOption())
    .action(withCode(async (id: string, o) => (await commands.access()).accessShow(ctx(), id, o)));
  for (const verdict of ['approve', 'deny'] as const) {
    access
      .command(`${verdict} <request-id>`)
      .description(`${verdict} a pending request (administrators other than its requester)${verdict === 'approve' ? ': its grant starts now' : ''}`)
      .requiredOption('--reason <text>', 'why (1 to 500 characters), for the requester and the audit')
      .addOption(jsonOption())
      .action(withCode(async (id: string, o) => (await commands.access()).accessReview(ctx(), verdict, id, o)));
  }
  access
    .command('revoke <request-id>')
    .description("end an approved request's grant now (administrators): its open sessions close (access_revoked)")
    .option('--reason <text>', 'why (1 to 500 characters)')
    .addOption(jsonOption())
    .action(withCode(async (id: string, o) => (await commands.access()).accessRevoke(ctx(), id, o)));
  access
    .command('cancel <request-id>')
    .description('cancel your pending request')
    .addOption(jsonOption())
    .action(withCode(async (id: string, o) => (await commands.access()).accessCancel(ctx(), id, o)));

  const policy = access.command('policy').description('the policies that say which devices and protocols need an approved request (administrators)');
  policy
    .command('add <name>')
    .description('add a policy: sessions of --protocol on devices with every --label need an approved request')
    .requiredOption('--label <key=value>', 'a label the devices have (repeat: all of them)', collect)
    .addOption(repeatable('--protocol <protocol>', 'a protocol that needs a request (repeat for more)', Object.keys(PROTOCOLS)).makeOptionMandatory())
    .option('--max-duration <duration>', 'the longest grant a request may ask for: 60s to 7d (default 1h)')
    .addOption(jsonOption())
    .addHelpText('after', POLICY_HELP)
    .action(withCode(async (name: string, o) => (await commands.policy()).policyAdd(ctx(), name, o)));
  policy
    .command('list')
    .description('the policies in force')
    .addOption(jsonOption())
    .action(withCode(async (o) => (await commands.policy()).policyList(ctx(), o)));
  policy
    .command('rm <policy-id>')
    .description('delete a policy (requests made under it keep their history); asks first')
    .addOption(yesOption())
    .action(withCode(async (id: string, o) => (await commands.policy()).policyRm(ctx(), id, o)));
}

function registerWebhook(program: Command, ctx: () => Context): void {
  const webhook = program.command('webhook').description('send audit events (access requests among them) to an http(s) URL, signed (administrators)');
  webhook
    .command('add <url>')
    .description('subscribe URL to events: each is POSTed to it, signed with the secret')
    .addOption(repeatable('--event <event>', 'an event to send (repeat for more)', Object.keys(EVENTS)).makeOptionMandatory())
    .option('--secret-stdin', 'read the signing secret (16 to 256 characters) from standard input')
    .option('--secret <secret>', 'the signing secret (visible in the process list: prefer --secret-stdin)')
    .addOption(new Option('--format <format>', 'json (the default) or slack (a body Slack shows)').choices(['json', 'slack']))
    .addOption(jsonOption())
    .addHelpText('after', WEBHOOK_HELP)
    .action(withCode(async (url: string, o) => (await commands.webhook()).webhookAdd(ctx(), url, o)));
  webhook
    .command('list')
    .description('the webhooks (never their secrets)')
    .addOption(jsonOption())
    .action(withCode(async (o) => (await commands.webhook()).webhookList(ctx(), o)));
  webhook
    .command('rm <webhook-id>')
    .description('delete a webhook: it receives nothing more; asks first')
    .addOption(yesOption())
    .action(withCode(async (id: string, o) => (await commands.webhook()).webhookRm(ctx(), id, o)));
  webhook
    .command('deliveries <webhook-id>')
    .description("a webhook's deliveries, newest first: status, attempts, the last answer")
    .addOption(new Option('--status <status>', 'only deliveries in this state').choices(['pending', 'delivered', 'failed']))
    .option('--limit <n>', 'how many (1 to 200, default 50)', limit)
    .addOption(jsonOption())
    .action(withCode(async (id: string, o) => (await commands.webhook()).webhookDeliveries(ctx(), id, o)));
}

/** Adds `access …` and `webhook …`; `setExit` receives the exit code of `access request`. */
export function registerAccessCommands(program: Command, ctx: () => Context, setExit: (code: number) => void): void {
  registerAccess(program, ctx, setExit);
  registerWebhook(program, ctx);
}
