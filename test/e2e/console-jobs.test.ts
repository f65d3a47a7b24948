/**
 * The console's jobs pages (issue 33) in the system's Chromium against a real server and two real
 * agents: a diagnostics and a command job (one device fails) seen live on the list and, on the
 * command job's page, the failed device's exit code and output tail; a diagnostics result as JSON;
 * a developer starts a job from the page and sees only their own, a role-less user gets no Jobs;
 * a job with queued executions canceled from its page. A screenshot of each page goes to
 * test-artifacts/console/.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Job } from '../../shared/api/jobs';
import { launchBrowser, signedInPage } from '../helpers/browser';
import { startStack, tempDir, type Stack } from '../helpers/stack';

const ARTIFACTS = resolve(__dirname, '../../test-artifacts/console');
const PASSWORD = 'a jobs passphrase';
/** How long a change may take to show: the machine may be busy. */
const SOON = { timeout: 20_000 };
/** Under the pages' backup poll (30 s, console/src/pages/jobs/live.ts): what shows this soon came by the event stream. */
const LIVE = { timeout: 25_000 };
/** Fails where the files root holds no marker.txt (cj-b), with output on both streams. */
const CHECK_MARKER = ['sh', '-c', 'if [ -e marker.txt ]; then echo "marker found"; else echo "checking"; echo "no marker in $(pwd)" >&2; exit 7; fi'];

let stack: Stack;
let browser: Browser;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack();
  await stack.admin.post('/v1/users', { username: 'cj-admin', role: 'administrator', password: PASSWORD });
  await stack.admin.post('/v1/users', { username: 'cj-dev', role: 'developer', password: PASSWORD });
  await stack.admin.post('/v1/users', { username: 'cj-none', role: null, password: PASSWORD });
  const withMarker = tempDir('tether-console-jobs-a-');
  writeFileSync(join(withMarker, 'marker.txt'), 'here\n');
  await stack.onlineDevice('cj-a', { TETHER_FILES_ROOT: withMarker });
  await stack.onlineDevice('cj-b', { TETHER_FILES_ROOT: tempDir('tether-console-jobs-b-') });
  await stack.addDevice('cj-off'); // registered, never online: its executions stay queued
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** A fresh page signed in with a password, the navigation shown. */
const signedIn = (username: string): Promise<Page> =>
  signedInPage(browser, stack.url, { username, password: PASSWORD }, { viewport: { width: 1280, height: 900 }, ready: '#nav:not([hidden]) a' });

/** Goes to a page of the console and waits for what shows it is there. */
async function open(page: Page, hash: string, ready: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(hash)}`);
  await page.waitForSelector(ready);
}

/** Creates a job through the API as the bootstrap administrator. */
async function createJob(body: Record<string, unknown>): Promise<Job> {
  const res = await stack.admin.post('/v1/jobs', body);
  expect(res.status, res.text).toBe(201);
  return res.body.data as Job;
}

const sections = (page: Page) => page.$$eval('#nav a', (links) => links.map((a) => a.textContent));
const statusOf = (page: Page, selector: string) => page.getAttribute(selector, 'data-status');
const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

describe('the jobs pages', () => {
  it('list a diagnostics and a command job live with their status; the failing one shows the failed device’s exit code and output tail', async () => {
    const page = await signedIn('cj-admin');
    expect(await sections(page)).toContain('Jobs');
    await open(page, '#/jobs', '#job-list');

    // Created while the list is open: they show up and finish on it without a reload.
    const diag = await createJob({ kind: 'diagnostics', target: { device_ids: ['cj-a', 'cj-b'] }, op: 'system.info', max_per_minute: 1000 });
    const cmd = await createJob({ kind: 'command', target: { device_ids: ['cj-a', 'cj-b'] }, argv: CHECK_MARKER, max_per_minute: 1000 });
    await expect.poll(() => statusOf(page, `[data-job-status="${diag.job_id}"]`), LIVE).toBe('completed');
    await expect.poll(() => statusOf(page, `[data-job-status="${cmd.job_id}"]`), LIVE).toBe('completed');
    expect(await page.textContent(`[data-job-progress="${cmd.job_id}"] .job-counts`)).toBe('2 of 2 ended: 1 succeeded, 1 failed');
    expect(await page.textContent(`[data-job-progress="${diag.job_id}"] .job-counts`)).toBe('2 of 2 ended: 2 succeeded');
    expect(await page.getAttribute(`[data-job-progress="${cmd.job_id}"] [role=progressbar]`, 'aria-valuenow')).toBe('2');
    await shot(page, 'jobs-list');

    // The command job's page: what ran, and each device's end.
    await page.click(`[data-job="${cmd.job_id}"]`);
    await page.waitForSelector('#execution-list table');
    expect(await page.textContent('#job-argv')).toContain('sh -c');
    expect(await statusOf(page, '#job-status .status')).toBe('completed');
    expect(await page.isHidden('#cancel-job')).toBe(true); // it ended: nothing to cancel
    expect(await statusOf(page, '[data-execution-status="cj-b"]')).toBe('failed');
    expect(await page.textContent('[data-exit-code="cj-b"]')).toBe('7');
    expect(await statusOf(page, '[data-execution-status="cj-a"]')).toBe('succeeded');
    expect(await page.textContent('[data-exit-code="cj-a"]')).toBe('0');
    // The output tail is folded until asked for, then shows both streams.
    expect(await page.isVisible('pre[data-output="cj-b"]')).toBe(false);
    await page.click('details:has(pre[data-output="cj-b"]) summary');
    expect(await page.isVisible('pre[data-output="cj-b"]')).toBe(true);
    const tail = (await page.textContent('pre[data-output="cj-b"]'))!;
    expect(tail).toContain('checking');
    expect(tail).toMatch(/no marker in \/\S+/);
    expect(await page.getAttribute('[data-device="cj-b"]', 'href')).toBe('#/devices/cj-b');
    // The status filter leaves only the failed device.
    await page.selectOption('#execution-status', 'failed');
    await expect.poll(() => page.$$eval('#execution-list [data-device]', (as) => as.map((a) => a.textContent)), SOON).toEqual(['cj-b']);
    await shot(page, 'job-command');

    // The diagnostics job's page: each device's result as formatted JSON.
    await open(page, `#/jobs/${diag.job_id}`, '#execution-list table');
    const result = JSON.parse((await page.textContent('pre[data-result="cj-a"]'))!) as { hostname?: string };
    expect(typeof result.hostname).toBe('string');
    await page.close();
  });

  it('a developer starts a diagnostics job from the page and sees only their own jobs; a role-less user gets no Jobs', async () => {
    const other = await createJob({ kind: 'diagnostics', target: { device_ids: ['cj-a'] }, op: 'system.metrics' });
    const dev = await signedIn('cj-dev');
    expect(await sections(dev)).toContain('Jobs');
    await open(dev, '#/jobs', '#job-list');
    expect(await dev.$(`[data-job="${other.job_id}"]`)).toBeNull();

    await dev.click('details.new-job summary');
    await dev.fill('#new-job-target', 'cj-a');
    await dev.selectOption('#new-job-op', 'system.info');
    await dev.click('#new-job-form button[type=submit]');
    await dev.waitForSelector('#job-facts');
    const jobId = new URL(dev.url()).hash.replace('#/jobs/', '');
    expect(jobId).toMatch(/^job_/);
    await expect.poll(() => statusOf(dev, '#job-status .status'), SOON).toBe('completed');
    await expect.poll(() => dev.$('pre[data-result="cj-a"]'), SOON).not.toBeNull();
    const shown = (await stack.admin.get(`/v1/jobs/${jobId}`)).body.data as Job;
    expect(shown).toMatchObject({ kind: 'diagnostics', created_by: 'cj-dev', target: { device_ids: ['cj-a'] } });
    await open(dev, '#/jobs', `[data-job="${jobId}"]`);
    expect(await dev.$(`[data-job="${other.job_id}"]`)).toBeNull();
    await dev.close();

    const none = await signedIn('cj-none');
    expect(await sections(none)).not.toContain('Jobs');
    await open(none, '#/jobs', '#app [role=alert]');
    expect(await none.textContent('#app [role=alert]')).toBe('This page needs the role developer or higher.');
    await none.close();
  });

  it('cancels a job with queued executions from its page, after asking', async () => {
    // One a minute over three devices (one never online): the first starts, the others wait.
    const job = await createJob({ kind: 'diagnostics', target: { device_ids: ['cj-a', 'cj-b', 'cj-off'] }, op: 'system.info', max_per_minute: 1 });
    const page = await signedIn('cj-admin');
    await open(page, `#/jobs/${job.job_id}`, '#execution-list table');
    expect(await statusOf(page, '#job-status .status')).toBe('in_progress');
    await expect.poll(() => page.textContent('#job-progress .job-counts'), SOON).toContain('2 queued');

    // Asked first: declining changes nothing.
    await page.click('#cancel-job');
    await page.click('[data-confirm=no]');
    expect(((await stack.admin.get(`/v1/jobs/${job.job_id}`)).body.data as Job).status).toBe('in_progress');

    await page.click('#cancel-job');
    expect(await page.textContent('#job-panel')).toContain('2 queued executions end canceled');
    await page.click('[data-confirm=yes]');
    await expect.poll(() => statusOf(page, '#job-status .status'), SOON).toBe('canceled');
    expect(await page.isHidden('#cancel-job')).toBe(true);
    await expect.poll(() => statusOf(page, '[data-execution-status="cj-off"]'), SOON).toBe('canceled');
    expect(await page.textContent('[data-error="cj-off"] code')).toBe('job_canceled');
    await expect.poll(() => page.textContent('#job-progress .job-counts'), SOON).toMatch(/2 canceled/);
    const after = (await stack.admin.get(`/v1/jobs/${job.job_id}`)).body.data as Job;
    expect(after).toMatchObject({ status: 'canceled', counts: { queued: 0, canceled: 2 } });
    await shot(page, 'job-canceled');
    await page.close();
  });
});
