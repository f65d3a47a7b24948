/**
 * `tether access …` and `tether webhook …` (docs/cli.md, Access requests) as users run them: the
 * real `dist/tether.cjs` against a real server with real agents. Checked: a policy added with the
 * CLI makes `exec` and `shell` refuse (exit 1) with the command that asks, administrators
 * included; `request --wait` says the decision another administrator took (approved: exit 0, and
 * the command then works; denied: exit 1; Ctrl-C: 130, still pending); self-review refused;
 * list, show, revoke, cancel; webhooks with the secret from stdin, their deliveries; usage
 * mistakes exit 2.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTether, startProcess, type Proc } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

let stack: Stack;
let configHome: string;
const tokens: Record<string, string> = {};
/** Bodies the webhook receiver got. */
const received: string[] = [];
let receiver: Server;

async function labelledDevice(id: string, labels: Record<string, string>): Promise<void> {
  const res = await stack.admin.post('/v1/devices', { device_id: id, labels });
  expect(res.status, res.text).toBe(201);
  stack.startAgent(id, res.body.data.agent_token as string);
  await stack.waitForStatus(id, 'online');
}

beforeAll(async () => {
  stack = await startStack();
  configHome = tempDir('tether-access-config-');
  await Promise.all([labelledDevice('ca-prod', { env: 'prod', site: 'ber' }), labelledDevice('ca-dev', { env: 'dev' })]);
  tokens.ann = await stack.userToken('ann', 'platform-engineer');
  tokens.bob = await stack.userToken('bob', 'administrator');
  tokens.carol = await stack.userToken('carol', 'administrator');
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => {
      received.push(body);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
}, 60_000);
afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await stack?.stop();
});

const env = (who: string) => ({ XDG_CONFIG_HOME: configHome, TETHER_SERVER: stack.url, TETHER_TOKEN: tokens[who] ?? stack.adminToken });
const tether = (who: string, args: string[], input = '') => runTether(args, env(who), input);
const requestOf = async (id: string) => (await stack.admin.get(`/v1/access-requests/${id}`)).body.data as { status: string; reviewed_by: string | null };
const COMMAND = 'tether access request ca-prod --protocol shell';

/** `tether access request … --wait` in the background; its process and the request's id once created. */
async function waitingRequest(who: string, reason: string): Promise<{ proc: Proc; id: string }> {
  const proc = startProcess(['access', 'request', 'ca-prod', '--protocol', 'shell', '--reason', reason, '--duration', '30m', '--wait'], env(who));
  const line = await proc.waitForLine(/^requested areq_\S+: .*waiting for an administrator/);
  return { proc, id: /^requested (areq_\S+):/.exec(line)![1]! };
}

describe('a policy added with the CLI', () => {
  it('policy add prints the policy; policy list shows it', async () => {
    const add = await tether('admin', ['access', 'policy', 'add', 'prod-shell', '--label', 'env=prod', '--protocol', 'shell', '--max-duration', '2h']);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toMatch(/^added apol_\S+ \(prod-shell\): shell on devices labelled env=prod need an approved access request, for at most 2h$/);
    const list = await tether('ann', ['access', 'policy', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ID +NAME +LABELS +PROTOCOLS +MAX DURATION +CREATED BY\napol_\S+ +prod-shell +env=prod +shell +2h +admin$/);
  });

  it('exec and shell are refused with the command that asks, for a platform engineer and an administrator (exit 1)', async () => {
    for (const who of ['ann', 'bob']) {
      for (const args of [
        ['exec', 'ca-prod', '--', 'true'],
        ['shell', 'ca-prod', '--', 'true'],
        ['session', 'open', 'ca-prod', '--protocol', 'shell'],
      ]) {
        const res = await tether(who, args);
        expect(res.code, `${who} ${args.join(' ')}`).toBe(1);
        expect(res.stderr).toContain(COMMAND);
        expect(res.stderr).toMatch(/^tether: .*ca-prod/);
      }
    }
    // A device no policy names is as before; so is a protocol the policy does not name.
    expect((await tether('ann', ['exec', 'ca-dev', '--', 'true'])).code).toBe(0);
    const diag = await tether('ann', ['diag', 'ca-prod', 'system.info', '--json']);
    expect(diag.code, diag.stderr).toBe(0);
  });
});

describe('access request --wait', () => {
  it('approved by another administrator: says so and exits 0; then exec works', async () => {
    const { proc, id } = await waitingRequest('ann', 'INC-1: telemetry stopped');
    const approve = await tether('bob', ['access', 'approve', id, '--reason', 'looks fine']);
    expect(approve.code, approve.stderr).toBe(0);
    expect(approve.stdout).toMatch(new RegExp(`^approved ${id}: ann may open shell on ca-prod until \\S+Z$`));
    expect((await proc.exited).code).toBe(0);
    expect(proc.stdout).toEqual([expect.stringMatching(/^approved by bob until (\d{4}-\d\d-\d\d )?\d\d:\d\d \(looks fine\)$/)]);
    expect(proc.stderr.join('\n')).toContain('open it with: tether shell ca-prod');
    const exec = await tether('ann', ['exec', 'ca-prod', '--', 'echo', 'granted']);
    expect(exec.code, exec.stderr).toBe(0);
    expect(exec.stdout).toBe('granted');

    // Revoked: the grant ends, the command is refused again.
    const revoke = await tether('carol', ['access', 'revoke', id, '--reason', 'done']);
    expect(revoke.code, revoke.stderr).toBe(0);
    expect(revoke.stdout).toContain(`revoked ${id}`);
    expect((await requestOf(id)).status).toBe('revoked');
    const again = await tether('ann', ['exec', 'ca-prod', '--', 'true']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(COMMAND);
  });

  it('denied: says who and why, exit 1', async () => {
    const { proc, id } = await waitingRequest('ann', 'INC-2');
    const deny = await tether('carol', ['access', 'deny', id, '--reason', 'not during the release']);
    expect(deny.code, deny.stderr).toBe(0);
    expect((await proc.exited).code).toBe(1);
    expect(proc.stdout).toEqual(['denied by carol: not during the release']);
    expect((await requestOf(id)).status).toBe('denied');
  });

  it('Ctrl-C stops waiting with 130, says how to cancel, and leaves the request pending', async () => {
    const { proc, id } = await waitingRequest('ann', 'INC-3');
    proc.kill('SIGINT');
    expect((await proc.exited).code).toBe(130);
    expect(proc.stderr.join('\n')).toContain(`tether access cancel ${id}`);
    expect((await requestOf(id)).status).toBe('pending');
    const cancel = await tether('ann', ['access', 'cancel', id]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toMatch(new RegExp(`^canceled ${id} \\(shell on ca-prod for 30m\\)$`));
    expect((await requestOf(id)).status).toBe('canceled');
  });

  it('an administrator may not review their own request: (self_review_forbidden), exit 1', async () => {
    const created = await tether('bob', ['access', 'request', 'ca-prod', '--protocol', 'shell', '--reason', 'mine', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const id = (JSON.parse(created.stdout) as { request_id: string }).request_id;
    const self = await tether('bob', ['access', 'approve', id, '--reason', 'trust me']);
    expect(self.code).toBe(1);
    expect(self.stderr).toMatch(/^tether: .*\(self_review_forbidden\)$/);
    expect((await requestOf(id)).status).toBe('pending');
    // Approving what is no longer pending: (conflict).
    expect((await tether('carol', ['access', 'deny', id, '--reason', 'no'])).code).toBe(0);
    const late = await tether('admin', ['access', 'approve', id, '--reason', 'too late']);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain('(conflict)');
  });
});

describe('list and show', () => {
  it('list: a table of every request, newest first; --status and --json; requesters see their own', async () => {
    const all = await tether('bob', ['access', 'list']);
    expect(all.code, all.stderr).toBe(0);
    const [header, ...rows] = all.stdout.split('\n');
    expect(header).toMatch(/^ID +STATUS +REQUESTER +DEVICE +PROTOCOLS +DURATION +CREATED +REVIEWER +UNTIL$/);
    expect(rows.map((r) => r.split(/ +/)[1])).toEqual(['denied', 'canceled', 'denied', 'revoked']);
    expect(rows[3]).toMatch(/^areq_\S+ +revoked +ann +ca-prod +shell +30m +\S+Z +bob +\S+Z$/);
    const denied = JSON.parse((await tether('bob', ['access', 'list', '--status', 'denied', '--json'])).stdout) as Array<{ requester: string }>;
    expect(denied.map((r) => r.requester)).toEqual(['bob', 'ann']);
    const mine = JSON.parse((await tether('ann', ['access', 'list', '--json'])).stdout) as Array<{ requester: string }>;
    expect(mine.length).toBe(3);
    expect(new Set(mine.map((r) => r.requester))).toEqual(new Set(['ann']));
  });

  it('show: what, why, the review, the grant and the revoke', async () => {
    const [revoked] = JSON.parse((await tether('ann', ['access', 'list', '--status', 'revoked', '--json'])).stdout) as Array<{ request_id: string }>;
    const show = await tether('ann', ['access', 'show', revoked!.request_id]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/^status +revoked$/m);
    expect(show.stdout).toMatch(/^reason +INC-1: telemetry stopped$/m);
    expect(show.stdout).toMatch(/^reviewed +\S+Z by bob: looks fine$/m);
    expect(show.stdout).toMatch(/^grant +\S+Z to \S+Z$/m);
    expect(show.stdout).toMatch(/^revoked +\S+Z by carol: done$/m);
    const missing = await tether('ann', ['access', 'show', 'areq_nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('(not_found)');
  });
});

describe('webhooks', () => {
  it('add (secret from stdin), list without the secret, deliveries, rm', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const secret = 'a-secret-of-thirty-two-characters';
    const add = await tether('admin', ['webhook', 'add', url, '--event', 'access_request.created', '--secret-stdin', '--json'], `${secret}\n`);
    expect(add.code, add.stderr).toBe(0);
    const hook = JSON.parse(add.stdout) as { webhook_id: string; events: string[] };
    expect(hook.events).toEqual(['access_request.created']);
    const list = await tether('admin', ['webhook', 'list']);
    expect(list.stdout).toContain(hook.webhook_id);
    expect(list.stdout).toContain(url);
    expect(list.stdout + (await tether('admin', ['webhook', 'list', '--json'])).stdout).not.toContain(secret);

    const created = await tether('ann', ['access', 'request', 'ca-prod', '--protocol', 'shell', '--reason', 'INC-4', '--json']);
    const id = (JSON.parse(created.stdout) as { request_id: string }).request_id;
    await waitFor(() => received.some((b) => b.includes(id)), 'the delivery of access_request.created', 15_000);
    await waitFor(async () => (await stack.admin.get(`/v1/webhooks/${hook.webhook_id}/deliveries`)).body.data[0]?.status === 'delivered', 'delivered');
    const deliveries = await tether('admin', ['webhook', 'deliveries', hook.webhook_id]);
    expect(deliveries.code, deliveries.stderr).toBe(0);
    expect(deliveries.stdout).toMatch(/^whd_\S+ +access_request\.created +delivered +1 +HTTP 200 /m);

    const rm = await tether('admin', ['webhook', 'rm', hook.webhook_id, '--yes']);
    expect(rm.code, rm.stderr).toBe(0);
    expect((await tether('admin', ['webhook', 'list'])).stdout).not.toContain(hook.webhook_id);
    expect((await tether('ann', ['access', 'cancel', id])).code).toBe(0);
  });
});

describe('usage mistakes exit 2, before anything is sent', () => {
  it.each([
    [['access', 'request', 'ca-prod', '--protocol', 'shell'], /--reason/],
    [['access', 'request', 'ca-prod', '--reason', 'x'], /--protocol/],
    [['access', 'request', 'ca-prod', '--protocol', 'telnet', '--reason', 'x'], /Allowed choices/],
    [['access', 'request', 'ca-prod', '--protocol', 'shell', '--reason', 'x', '--duration', '10s'], /--duration must be a duration from 1m to 7d/],
    [['access', 'request', 'ca-prod', '--protocol', 'shell', '--reason', ' '], /--reason must say why/],
    [['access', 'approve', 'areq_x'], /--reason/],
    [['access', 'policy', 'add', 'p', '--label', 'prod', '--protocol', 'shell'], /--label takes KEY=VALUE/],
    [['access', 'policy', 'add', 'p', '--label', 'env=prod', '--protocol', 'shell', '--max-duration', '9d'], /--max-duration/],
    [['access', 'policy', 'rm', 'apol_x'], /add --yes/],
    [['webhook', 'add', 'http://127.0.0.1:9/h', '--event', 'access_request.created'], /needs a secret/],
    [['webhook', 'add', 'http://127.0.0.1:9/h', '--event', 'access_request.created', '--secret', 'short'], /16 to 256 characters/],
    [['webhook', 'add', 'ftp://example.com/h', '--event', 'access_request.created', '--secret', 'x'.repeat(20)], /http:\/\/ or https:\/\//],
    [['webhook', 'add', 'http://127.0.0.1:9/h', '--event', 'no.such', '--secret', 'x'.repeat(20)], /Allowed choices/],
  ])('tether %j', async (args, said) => {
    const res = await tether('admin', args);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(said);
  });
});
