/**
 * The console's access requests (issue 34) in the system's Chromium against a real server and a
 * real agent: an administrator adds a policy for env=prod from the page; a platform engineer sees
 * on the prod device's page that it needs a request, has the shell refused with the server's
 * message, and asks from the form the page links to; a second administrator sees the request
 * arrive live, cannot approve their own, and approves it with a reason; the engineer's device page
 * shows the grant and the shell opens; a revoke from the page ends the engineer's session at once.
 * A screenshot of each page goes to test-artifacts/console/.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessPolicy, AccessRequest } from '../../shared/api/access';
import type { Session } from '../../shared/api/sessions';
import { launchBrowser, signedInPage, terminalText } from '../helpers/browser';
import { startStack, type Stack } from '../helpers/stack';

const ARTIFACTS = resolve(__dirname, '../../test-artifacts/console');
const PASSWORD = 'an access passphrase';
/** How long a change may take to show: the machine may be busy. */
const SOON = { timeout: 20_000 };
/** Under the page's backup poll (30 s, console/src/pages/access/live.ts): what shows this soon came by the event stream. */
const LIVE = { timeout: 25_000 };

let stack: Stack;
let browser: Browser;
/** Pages kept open across the steps, as people would keep them. */
const pages: Page[] = [];

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack();
  await stack.admin.post('/v1/users', { username: 'cx-admin', role: 'administrator', password: PASSWORD });
  await stack.admin.post('/v1/users', { username: 'cx-boss', role: 'administrator', password: PASSWORD });
  await stack.admin.post('/v1/users', { username: 'cx-eng', role: 'platform-engineer', password: PASSWORD });
  const registered = await stack.admin.post('/v1/devices', { device_id: 'cx-prod', labels: { env: 'prod', site: 'north' } });
  expect(registered.status, registered.text).toBe(201);
  stack.startAgent('cx-prod', registered.body.data.agent_token as string);
  await stack.waitForStatus('cx-prod', 'online');
  await stack.onlineDevice('cx-lab');
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await Promise.all(pages.map((p) => p.close()));
  await browser?.close();
  await stack?.stop();
});

/** A fresh page signed in with a password, the navigation shown; closed in teardown. */
async function signedIn(username: string): Promise<Page> {
  const page = await signedInPage(
    browser,
    stack.url,
    { username, password: PASSWORD },
    { viewport: { width: 1400, height: 900 }, ready: '#nav:not([hidden]) a' },
  );
  pages.push(page);
  return page;
}

/** Goes to a page of the console and waits for what shows it is there. */
async function open(page: Page, hash: string, ready: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await page.waitForSelector(ready);
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
const text = async (page: Page, selector: string) => (await page.textContent(selector)) ?? '';
/** A request's status as its row shows it; null while the row is not there. */
const statusOf = async (page: Page, id: string) => (await page.$(`[data-request-status="${id}"]`))?.getAttribute('data-status') ?? null;

/** Answers the page's reason question with `reason` and the action button. */
async function answerWith(page: Page, reason: string): Promise<void> {
  await page.fill('#access-question #access-reason', reason);
  await page.click('#access-question [data-confirm=yes]');
}

describe('access requests in the console', () => {
  let admin: Page;
  let boss: Page;
  let eng: Page;
  let requestId: string;

  it('an administrator adds a policy for env=prod from the page', async () => {
    admin = await signedIn('cx-admin');
    await open(admin, '#/access', '#access-policies #policy-list');
    await expect.poll(() => text(admin, '#policy-list'), SOON).toContain('No policies');
    await admin.click('#new-policy summary');
    await admin.fill('#policy-name', 'production');
    await admin.fill('#policy-labels', 'env=prod');
    // Shell and file transfer are checked to begin with; diagnostics stays free.
    expect(await admin.isChecked('#policy-protocol-shell')).toBe(true);
    expect(await admin.isChecked('#policy-protocol-diagnostics')).toBe(false);
    await admin.fill('#policy-max-duration', '120');
    await admin.click('#policy-form button[type=submit]');
    await admin.waitForSelector('#policy-list [data-policy]');
    const row = await text(admin, '#policy-list tbody tr');
    expect(row).toContain('production');
    expect(row).toContain('env=prod');
    expect(row).toContain('2 h');

    const listed = (await stack.admin.get('/v1/access-policies')).body.data as AccessPolicy[];
    expect(listed.map((p) => [p.name, p.match.labels, [...p.protocols].sort(), p.max_duration_seconds, p.created_by])).toEqual([
      ['production', { env: 'prod' }, ['file-transfer', 'shell'], 7200, 'cx-admin'],
    ]);
    await shot(admin, 'access-policies');
  }, 120_000);

  it('an engineer sees that the prod device needs a request, has the shell refused with the message, and asks from the form', async () => {
    // The second administrator keeps the requests open: the new one must show up there by itself.
    boss = await signedIn('cx-boss');
    await open(boss, '#/access', '#access-list');

    eng = await signedIn('cx-eng');
    await open(eng, '#/devices/cx-lab', '#diagnostics');
    await eng.waitForSelector('#access-notice[data-checked]', { state: 'attached' });
    expect(await text(eng, '#access-notice')).toBe(''); // no policy matches this one

    await open(eng, '#/devices/cx-prod', '#access-notice .access-needed');
    expect(await text(eng, '#access-notice')).toContain('Shell and file transfer on this device need an approved access request');
    expect(await eng.getAttribute('#request-access', 'href')).toBe('#/access?device=cx-prod&protocols=shell'); // file transfer takes an administrator;
    await eng.waitForSelector('#diagnostics h2'); // diagnostics is not under the policy
    await shot(eng, 'access-device-needs-request');

    await eng.click('#open-shell');
    await expect.poll(() => text(eng, '#terminal-status'), SOON).toContain('tether access request cx-prod --protocol shell');
    expect(await eng.$('#terminal .xterm')).toBeNull();
    await shot(eng, 'access-shell-refused');

    await open(eng, '#/devices/cx-prod', '#request-access');
    await eng.click('#request-access');
    await eng.waitForSelector('#access-request-form');
    expect(await eng.inputValue('#access-device')).toBe('cx-prod');
    expect(await eng.isChecked('#access-protocol-shell')).toBe(true);
    expect(await eng.isChecked('#access-protocol-file-transfer')).toBe(false);
    expect(await eng.isDisabled('#access-protocol-file-transfer')).toBe(true); // not for their role
    expect(await eng.isChecked('#access-protocol-diagnostics')).toBe(false);
    await eng.fill('#access-request-reason', 'INC-4711: camera service crash-loops');
    await eng.fill('#access-duration', '30');
    await eng.click('#access-request-form button[type=submit]');
    // What the server answered: the request, or (a failure) its message.
    await eng.waitForSelector('#access-request-result [data-requested], #access-request-result [role=alert]');
    expect(await eng.$('#access-request-result [role=alert]'), await text(eng, '#access-request-result')).toBeNull();
    requestId = (await eng.getAttribute('[data-requested]', 'data-requested'))!;
    expect(requestId).toMatch(/^areq_/);
    await expect.poll(() => statusOf(eng, requestId), SOON).toBe('pending');
    expect(await eng.$(`[data-cancel="${requestId}"]`)).not.toBeNull(); // theirs, pending: they may cancel it
    expect(await eng.$(`[data-approve="${requestId}"]`)).toBeNull();
    await shot(eng, 'access-requested');
  }, 120_000);

  it('a second administrator sees it pending live, cannot approve their own, and approves it with a reason', async () => {
    await expect.poll(() => statusOf(boss, requestId), LIVE).toBe('pending');
    expect(await text(boss, `[data-request-reason="${requestId}"]`)).toBe('INC-4711: camera service crash-loops');

    // Their own request shows no Approve (the server would refuse it: self_review_forbidden).
    const own = await stack.as((await stack.admin.post('/v1/tokens', { username: 'cx-boss' })).body.data.token as string).post('/v1/access-requests', {
      device_id: 'cx-prod',
      protocols: ['shell'],
      reason: 'my own look',
    });
    expect(own.status, own.text).toBe(201);
    const ownId = (own.body.data as AccessRequest).request_id;
    await expect.poll(() => statusOf(boss, ownId), LIVE).toBe('pending');
    expect(await boss.$(`[data-approve="${ownId}"]`)).toBeNull();
    expect(await boss.$(`[data-cancel="${ownId}"]`)).not.toBeNull();
    // Pending first, the newest first among them.
    expect(await boss.$$eval('#access-list [data-request-status]', (els) => els.slice(0, 2).map((e) => e.getAttribute('data-status')))).toEqual([
      'pending',
      'pending',
    ]);
    await shot(boss, 'access-pending');
    // They may cancel it themselves.
    await boss.click(`[data-cancel="${ownId}"]`);
    await expect.poll(() => statusOf(boss, ownId), SOON).toBe('canceled');
    expect(await text(boss, '#access-panel')).toContain('Canceled your request for cx-prod.');

    await boss.click(`[data-approve="${requestId}"]`);
    // The reason is required: approving without one does nothing.
    await boss.click('#access-question [data-confirm=yes]');
    expect(await statusOf(boss, requestId)).toBe('pending');
    await answerWith(boss, 'on call, INC-4711 confirmed');
    await expect.poll(() => statusOf(boss, requestId), SOON).toBe('approved');
    expect(await text(boss, '#access-panel')).toContain('Approved: cx-eng may use cx-prod until');
    const row = await text(boss, `tr:has([data-request-status="${requestId}"])`);
    expect(row).toContain('approved by cx-boss: on call, INC-4711 confirmed');
    expect(await boss.$(`[data-countdown="${requestId}"]`)).not.toBeNull();
  }, 120_000);

  it('the engineer’s pages show the grant and the shell opens; a revoke from the page ends the session', async () => {
    // Their requests page followed the approval without a reload.
    await expect.poll(() => statusOf(eng, requestId), LIVE).toBe('approved');
    expect(await text(eng, `[data-countdown="${requestId}"]`)).toMatch(/\((29|30):\d\d left\)/);

    await open(eng, '#/devices/cx-prod', `#access-notice [data-grant="${requestId}"]`);
    expect(await text(eng, `[data-grant="${requestId}"]`)).toMatch(/^Granted until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d by cx-boss \(shell\)\.$/);
    expect(await eng.$('#request-access')).toBeNull(); // nothing left to ask for
    await shot(eng, 'access-granted');

    await eng.click('#open-shell');
    await expect.poll(() => text(eng, '#terminal-status'), SOON).toContain('Connected to cx-prod');
    await expect.poll(() => terminalText(eng), SOON).toMatch(/[$#] $/m); // a prompt
    await eng.keyboard.type('echo granted-$((30+4))\n');
    await expect.poll(() => terminalText(eng), SOON).toMatch(/^granted-34$/m);
    const sessions = (await stack.admin.get('/v1/remote-access/sessions?device_id=cx-prod&status=open')).body.data as Session[];
    expect(sessions.map((s) => [s.opened_by, s.protocol])).toEqual([['cx-eng', 'shell']]);
    const grant = (await stack.admin.get(`/v1/access-requests/${requestId}`)).body.data as AccessRequest;
    expect(Date.parse(sessions[0]!.expires_at)).toBeLessThanOrEqual(Date.parse(grant.ends_at!));

    await open(boss, '#/access', `[data-revoke="${requestId}"]`);
    await boss.click(`[data-revoke="${requestId}"]`);
    await answerWith(boss, 'fixed, closing access');
    await expect.poll(() => statusOf(boss, requestId), SOON).toBe('revoked');
    expect(await text(boss, `tr:has([data-request-status="${requestId}"])`)).toContain('revoked by cx-boss: fixed, closing access');

    // The stream closes with the reason (or the shell's exit arrives first); either way the session is over.
    await eng.waitForSelector('#terminal-new-session', SOON);
    expect(await text(eng, '#terminal-status')).toMatch(/access grant was revoked|The shell exited/);
    expect(await text(eng, '#terminal-again')).toContain('The session is closed');
    const closed = (await stack.admin.get(`/v1/remote-access/sessions/${sessions[0]!.session_id}`)).body.data as Session;
    expect([closed.status, closed.close_reason]).toEqual(['closed', 'access_revoked']);
    await shot(eng, 'access-revoked-terminal');
    await shot(boss, 'access-revoked');
  }, 120_000);

  it('an administrator deletes the policy from the page: the device no longer needs a request', async () => {
    await open(admin, '#/access', '#policy-list [data-delete-policy]');
    await admin.click('#policy-list [data-delete-policy]');
    await admin.click('#policy-panel [data-confirm=yes]');
    await expect.poll(() => text(admin, '#policy-list'), SOON).toContain('No policies');
    expect(((await stack.admin.get('/v1/access-policies')).body.data as AccessPolicy[]).length).toBe(0);
    // The history stays: the revoked request is still listed.
    expect(await statusOf(admin, requestId)).toBe('revoked');

    await open(eng, '#/devices/cx-prod', '#diagnostics');
    await eng.waitForSelector('#access-notice[data-checked]', { state: 'attached' });
    expect(await text(eng, '#access-notice')).toBe('');
  }, 120_000);
});
