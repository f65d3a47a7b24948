/**
 * The web console's everyday administration (issue 32) in the system's Chromium against a real
 * server and real agent processes: registering a device and starting its agent with the token the
 * page showed once, rotating that token (the old agent is refused), users (a developer sees
 * neither the admin pages nor Files; a disabled one is signed out), tokens shown once and revoked,
 * services with their canary, fleet groups with their vehicles, and one date format everywhere.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_MIN_ROLE as SERVER_ROLES } from '../../api/roles';
import { PROTOCOL_MIN_ROLE as CONSOLE_ROLES } from '../../console/src/roles';
import { launchBrowser, signedInPage, signInWithPassword, strictPage } from '../helpers/browser';
import type { Proc } from '../helpers/processes';
import { serviceSpec } from '../helpers/service-spec';
import { startStack, type Stack } from '../helpers/stack';
import { waitFor } from '../helpers/wait';

const PASSWORD = 'an admin passphrase';
/** How long a change may take to show: the machine may be busy. */
const SOON = { timeout: 10_000 };

let stack: Stack;
let browser: Browser;

beforeAll(async () => {
  stack = await startStack();
  await stack.admin.post('/v1/users', { username: 'adm-ann', role: 'administrator', password: PASSWORD });
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** A fresh page signed in with a password, on the page it lands on. */
const signedIn = (username = 'adm-ann', password = PASSWORD): Promise<Page> =>
  signedInPage(browser, stack.url, { username, password }, { viewport: { width: 1280, height: 800 }, ready: '#nav:not([hidden]) a' });

/** Goes to a page of the console and waits for what shows it is there. */
async function open(page: Page, hash: string, ready: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await page.waitForSelector(ready);
}

const pad = (n: number) => String(n).padStart(2, '0');
/** The one format, worked out here on its own: local `YYYY-MM-DD HH:MM:SS`. */
const localTime = (iso: string) => {
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
};

/**
 * Every date on the page is a `<time>` in the one format (local `YYYY-MM-DD HH:MM:SS`, the browser
 * and this process share the machine's time zone) with the ISO instant as its title; no date
 * in a locale's format is left. Answers how many there are.
 */
async function datesInOneFormat(page: Page): Promise<number> {
  const times = await page.$$eval('#app time', (els) =>
    els.map((e) => ({ text: e.textContent, title: e.getAttribute('title'), datetime: e.getAttribute('datetime') })),
  );
  for (const t of times) {
    expect(t.text).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    expect(t.title).toBe(t.datetime);
    expect(t.title).toBe(new Date(t.title!).toISOString());
    expect(t.text).toBe(localTime(t.title!));
  }
  const text = (await page.textContent('#app')) ?? '';
  expect(text).not.toMatch(/\d{1,2}\/\d{1,2}\/\d{4}|\d{1,2}\.\d{1,2}\.\d{4}|\bago\b/);
  return times.length;
}

/** The navigation's sections, as shown. */
const sections = (page: Page) => page.$$eval('#nav a', (links) => links.map((a) => a.textContent));

describe('devices', () => {
  let first: Proc | undefined;
  let second: Proc | undefined;
  afterAll(async () => {
    await first?.stop();
    await second?.stop();
  });

  it('registers a device and shows its token once with the command line; the agent started with it comes online; a rotated token cuts the old agent off', async () => {
    const page = await signedIn();
    await page.waitForSelector('#device-list');
    await page.fill('#new-device-id', 'cadm-1');
    await page.click('#register-device button[type=submit]');
    await page.waitForSelector('#agent-setup[data-device="cadm-1"]');
    const token = (await page.textContent('#agent-token'))!;
    expect(token).toMatch(/^tdev_/);
    expect(await page.textContent('#agent-env')).toBe(`TETHER_SERVER=${stack.url}\nTETHER_DEVICE_ID=cadm-1\nTETHER_DEVICE_TOKEN=${token}\n`);
    expect(await page.textContent('#agent-command')).toBe(`TETHER_DEVICE_TOKEN=${token} tether agent --server ${stack.url} --device-id cadm-1`);
    expect(await page.textContent('#agent-setup')).toContain('shown this once');

    // The agent, started with what the page showed, comes online on the page without a reload.
    first = stack.startAgent('cadm-1', token);
    const badge = page.locator('#device-list [data-device="cadm-1"]');
    await expect.poll(() => badge.textContent(), { timeout: 15_000 }).toBe('online');
    expect(await datesInOneFormat(page)).toBeGreaterThan(0);

    // Shown once: back on the list, the token is nowhere.
    await open(page, '#/devices/cadm-1', '#rotate-token');
    await open(page, '#/devices', '#device-list table');
    expect(await page.textContent('#app')).not.toContain(token);

    // Rotating asks first; Cancel changes nothing.
    await open(page, '#/devices/cadm-1', '#rotate-token');
    await page.click('#rotate-token');
    await page.click('[data-confirm=no]');
    expect(await page.$('#agent-setup')).toBeNull();
    expect(await stack.agentStatus('cadm-1')).toBe('online');
    await page.click('#rotate-token');
    await page.click('[data-confirm=yes]');
    await page.waitForSelector('#agent-setup[data-device="cadm-1"]');
    const rotated = (await page.textContent('#agent-token'))!;
    expect(rotated).toMatch(/^tdev_/);
    expect(rotated).not.toBe(token);
    expect(await page.textContent('#agent-command')).toContain(`TETHER_DEVICE_TOKEN=${rotated} `);

    // The old agent is disconnected and refused from then on; the page sees it go offline.
    await expect.poll(() => page.textContent('#device-status-badge'), { timeout: 15_000 }).toBe('offline');
    await first.waitForLine(/"status":401/);
    second = stack.startAgent('cadm-1', rotated);
    await expect.poll(() => page.textContent('#device-status-badge'), { timeout: 15_000 }).toBe('online');
    expect(await datesInOneFormat(page)).toBeGreaterThan(0);
    await page.close();
  });

  it('removes a device after asking', async () => {
    await stack.addDevice('cadm-gone');
    const page = await signedIn();
    await open(page, '#/devices/cadm-gone', '#remove-device');
    await page.click('#remove-device');
    await page.click('[data-confirm=yes]');
    await page.waitForSelector('#device-list');
    expect((await stack.admin.get('/v1/devices/cadm-gone')).status).toBe(404);
    await page.close();
  });
});

describe('users and tokens', () => {
  it('an administrator adds a developer, who sees neither the admin pages nor Files; disabling signs the developer out', async () => {
    await stack.addDevice('cadm-dev-box');
    const admin = await signedIn();
    expect(await sections(admin)).toEqual(['Devices', 'Services', 'Sessions', 'Jobs', 'Access', 'Audit', 'Fleet', 'Users', 'Tokens']);
    await open(admin, '#/users', '#user-list table');
    await admin.fill('#new-username', 'cadm-dev');
    await admin.selectOption('#new-role', 'developer');
    await admin.fill('#new-password', 'a developer passphrase');
    await admin.click('#new-user button[type=submit]');
    await admin.waitForSelector('[data-user-state="cadm-dev"]');
    expect(await admin.textContent('[data-user-state="cadm-dev"]')).toBe('enabled');
    expect(await admin.inputValue('[data-user-role="cadm-dev"]')).toBe('developer');
    expect(await datesInOneFormat(admin)).toBeGreaterThan(0);

    const dev = await signedIn('cadm-dev', 'a developer passphrase');
    expect(await sections(dev)).toEqual(['Devices', 'Services', 'Sessions', 'Jobs', 'Access', 'Audit', 'Fleet', 'Tokens']);
    await dev.waitForSelector('#device-list table');
    expect(await dev.$('#register-device')).toBeNull();
    await open(dev, '#/devices/cadm-dev-box', '#diagnostics');
    expect(await dev.$('#open-files')).toBeNull(); // file transfer takes an administrator
    expect(await dev.$('#open-shell')).toBeNull(); // a shell takes a platform engineer
    expect(await dev.$('#rotate-token')).toBeNull();
    await open(dev, '#/files/cadm-dev-box', '#app [role=alert]');
    expect(await dev.textContent('#app [role=alert]')).toBe('This page needs the role administrator or higher.');
    await open(dev, '#/users', '#app [role=alert]');
    expect(await dev.$('#user-list')).toBeNull();

    // Disabled: the developer's next request is refused and the console signs out.
    await admin.click('[data-user="cadm-dev"] [data-action=disable]');
    await expect.poll(() => admin.textContent('[data-user-state="cadm-dev"]'), SOON).toBe('disabled');
    expect(await admin.textContent('#user-outcome')).toContain('cadm-dev is disabled');
    await open(dev, '#/services', '#username');
    expect(await dev.isHidden('#nav')).toBe(true);
    await signInWithPassword(dev, 'cadm-dev', 'a developer passphrase');
    await expect.poll(() => dev.textContent('[role=alert]'), SOON).toContain('Wrong username or password');
    expect(await dev.isHidden('#nav')).toBe(true);

    // Enabled again, given a new password, then removed after a question.
    await admin.click('[data-user="cadm-dev"] [data-action=enable]');
    await expect.poll(() => admin.textContent('[data-user-state="cadm-dev"]'), SOON).toBe('enabled');
    await admin.click('[data-user="cadm-dev"] [data-action=password]');
    await admin.fill('#set-password', 'another passphrase');
    await admin.click('#password-form button[type=submit]');
    await expect.poll(() => admin.textContent('#user-outcome'), SOON).toContain('The password of cadm-dev is changed');
    const login = await fetch(`${stack.url}/v1/auth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'cadm-dev', password: 'another passphrase' }),
    });
    expect(login.status).toBe(200);
    await admin.click('[data-user="cadm-dev"] [data-action=remove]');
    await admin.click('[data-confirm=yes]');
    await expect.poll(() => admin.$('[data-user-state="cadm-dev"]'), SOON).toBeNull();
    expect((await stack.admin.get('/v1/users')).body.data.map((u: { username: string }) => u.username)).not.toContain('cadm-dev');
    await admin.close();
    await dev.close();
  });

  it('creates a token shown once, lists it, and revokes it', async () => {
    await stack.admin.post('/v1/users', { username: 'cadm-bot', role: 'developer', kind: 'service' });
    const page = await signedIn();
    await open(page, '#/tokens', '#new-token-form');
    await page.fill('#token-username', 'cadm-bot');
    await page.fill('#token-ttl', '3600');
    await page.fill('#token-scopes', 'devices:read');
    await page.click('#new-token-form button[type=submit]');
    await page.waitForSelector('#new-token');
    const secret = (await page.textContent('#new-token'))!;
    const bot = stack.as(secret);
    expect((await bot.get('/v1/devices')).status).toBe(200);

    await page.check('#tokens-all');
    const id = (await bot.get('/v1/me')).body.data.token_id as string;
    await page.waitForSelector(`[data-token-state="${id}"]`);
    expect(await page.textContent(`[data-token-state="${id}"]`)).toBe('active');
    expect(await datesInOneFormat(page)).toBeGreaterThan(1);
    await page.click(`[data-revoke="${id}"]`);
    await page.click('[data-confirm=yes]');
    await expect.poll(() => page.$(`[data-token-state="${id}"]`), SOON).toBeNull(); // the list shows active tokens
    expect((await bot.get('/v1/devices')).status).toBe(401);
    await page.selectOption('#tokens-status', 'revoked');
    await expect.poll(() => page.textContent(`[data-token-state="${id}"]`).catch(() => null), SOON).toBe('revoked');
    await page.close();
  });
});

describe('services and fleet', () => {
  it('lists services with their status and canary', async () => {
    const apply = (yaml: string) => stack.admin.raw('POST', '/v1/services?env=staging', yaml, { 'content-type': 'application/yaml' });
    const service = async () => (await stack.admin.get('/v1/services/cadm-shop?env=staging')).body.data;
    expect((await apply(serviceSpec({ name: 'cadm-shop', replicas: 2 }))).status).toBe(200);
    await waitFor(async () => (await service()).status === 'healthy' || undefined, 'cadm-shop v1.0.0 to be healthy');
    expect((await apply(serviceSpec({ name: 'cadm-shop', tag: '1.1.0', replicas: 2, strategy: 'canary', weight: 25 }))).status).toBe(200);

    const page = await signedIn();
    await open(page, '#/services', '#services-staging table');
    // The list is read again every 3 s: rollouts move on their own.
    const refreshed = SOON;
    await expect.poll(() => page.textContent('[data-service="cadm-shop"]'), refreshed).toBe('healthy');
    await expect.poll(() => page.textContent('[data-canary="cadm-shop"]'), refreshed).toBe('25 % · ready');
    expect(await page.locator('#services-staging tr', { hasText: 'cadm-shop' }).textContent()).toContain('v1.0.0, canary v1.1.0 at 25 %');
    expect((await stack.admin.post('/v1/services/cadm-shop/canary/halt?env=staging', {})).status).toBe(200);
    await expect.poll(() => page.textContent('[data-canary="cadm-shop"]'), refreshed).toBe('0 % · halted');
    expect(await datesInOneFormat(page)).toBeGreaterThan(0);
    await page.close();
  });

  it('lists fleet groups of the chosen tenant and their vehicles, and assigns one', async () => {
    const fleet = (tenant: string) => ({ 'x-tenant-id': tenant });
    const group = (await stack.admin.post('/v1/fleet/groups', { name: 'Vans', region: 'eu-central-1' }, fleet('cadm-acme'))).body.data;
    await stack.admin.post('/v1/fleet/groups', { name: 'Elsewhere' }, fleet('cadm-globex'));
    const van = (await stack.admin.post('/v1/fleet/vehicles', { vin: '1HGCM82633A004352' }, fleet('cadm-acme'))).body.data;
    const spare = (await stack.admin.post('/v1/fleet/vehicles', { vin: '1HGCM82633A004353' }, fleet('cadm-acme'))).body.data;
    expect((await stack.admin.put(`/v1/fleet/vehicles/${van.vehicle_id}/group`, { group_id: group.group_id }, fleet('cadm-acme'))).status).toBe(200);

    // A password sign-in holds no tenant: the page says so.
    const plain = await signedIn();
    await open(plain, '#/fleet', '#fleet-no-tenant');
    await plain.close();

    // A token with two tenants: a choice between them, the first shown.
    const issued = (await stack.admin.post('/v1/tokens', { username: 'adm-ann', tenants: ['cadm-acme', 'cadm-globex'] })).body.data.token as string;
    const page = await strictPage(browser);
    await page.goto(`${stack.url}/#/fleet`);
    await page.fill('#token', issued);
    await page.click('text=Use token');
    await page.waitForSelector('#nav:not([hidden]) a');
    await open(page, '#/fleet', `[data-group="${group.group_id}"]`);
    expect(await page.textContent(`[data-vehicle-count="${group.group_id}"]`)).toBe('1');
    expect(await datesInOneFormat(page)).toBeGreaterThan(0);
    await page.click(`button[data-group="${group.group_id}"]`);
    await page.waitForSelector(`#fleet-vehicles [data-vehicle="${van.vehicle_id}"]`);
    await page.fill('#assign-vehicle', spare.vehicle_id);
    await page.click('#fleet-group button[type=submit]');
    await page.waitForSelector(`#fleet-vehicles [data-vehicle="${spare.vehicle_id}"]`);
    await expect.poll(() => page.textContent(`[data-vehicle-count="${group.group_id}"]`), SOON).toBe('2');

    await page.selectOption('#fleet-tenant', 'cadm-globex');
    await expect.poll(() => page.textContent('#fleet-groups'), SOON).toContain('Elsewhere');
    expect(await page.textContent('#fleet-groups')).not.toContain('Vans');
    await page.close();
  });
});

it("the console's table of protocol roles is the server's", () => {
  expect(CONSOLE_ROLES).toEqual(SERVER_ROLES);
});
