/**
 * The console's Files page, terminal and player (issue 32) in the system's Chromium against a
 * real server and a real agent: a folder made, filled, renamed into, downloaded as a tar and
 * deleted (checked on the device's disk), a rename out of the root refused; a shell that exits
 * and is reconnected in the same session, then in a new one once the session is closed, with the
 * relay's expiry notice as a banner; a recording sought to its middle and fitted to the window.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, signedInPage, terminalText } from '../helpers/browser';
import { clockText, lengthOf, timeline } from '../../console/src/pages/player-timeline';
import { parseCastEvent, type CastEvent } from '../../shared/asciicast';
import { closeAndReadRecording, openRecordedShell, runInShell } from '../helpers/recorded-shell';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { extractInto } from '../helpers/tar';

const PASSWORD = 'a files passphrase';
const USER = 'files-ann';
/** The console's one date format (console/src/format.ts). */
const TIME = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/;

let stack: Stack;
let browser: Browser;
let filesRoot: string;

beforeAll(async () => {
  // A session of the default hour is warned 10 s after it opens: the banner without waiting minutes.
  stack = await startStack({ env: { TETHER_SESSION_WARNINGS: '3590' } });
  expect((await stack.admin.post('/v1/users', { username: USER, role: 'administrator', password: PASSWORD })).status).toBe(201);
  filesRoot = tempDir('tether-console-files-');
  await stack.onlineDevice('cf-dev', { TETHER_FILES_ROOT: filesRoot });
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** A fresh page signed in as USER, with the navigation shown. */
const signedIn = (viewport = { width: 1280, height: 800 }): Promise<Page> =>
  signedInPage(browser, stack.url, { username: USER, password: PASSWORD }, { viewport, acceptDownloads: true, ready: '#nav:not([hidden])' });

const news = (page: Page) => page.textContent('#files-status');

describe('files', () => {
  it('makes a folder, uploads into it, renames, downloads the folder as a tar and deletes it', async () => {
    const page = await signedIn();
    await page.goto(`${stack.url}/#/files/cf-dev`);
    await page.waitForSelector('#upload-input:not([disabled])'); // the page's stream is open
    // The relay's warning reaches a file-transfer stream too (10 s after the open): a banner,
    // waited for first so that it does not move the buttons under a click.
    await page.waitForSelector('#session-notice:not([hidden])', { timeout: 30_000 });
    expect(await page.textContent('#session-notice')).toContain('expires in');
    await page.click('#new-folder-button');
    await page.fill('#new-folder-name', 'box');
    await page.click('#new-folder-confirm');
    await expect.poll(() => news(page)).toBe('Created the folder box.');
    await page.waitForSelector('[data-remove="box"]');
    expect(existsSync(join(filesRoot, 'box'))).toBe(true);
    for (const t of await page.locator('#files-list time').allTextContents()) expect(t).toMatch(TIME);

    await page.click('#files-list a:text-is("box/")');
    await expect.poll(() => page.textContent('#files-path')).toBe('root / box');
    const local = join(tempDir('tether-console-up-'), 'note.txt');
    writeFileSync(local, 'inside the box\n');
    await page.setInputFiles('#upload-input', local);
    await expect.poll(() => news(page), { timeout: 30_000 }).toContain('Uploaded 1 file');
    expect(readFileSync(join(filesRoot, 'box', 'note.txt'), 'utf8')).toBe('inside the box\n');

    await page.click('[data-rename="note.txt"]');
    await page.fill('#rename-name', 'renamed.txt');
    await page.click('#rename-confirm');
    await expect.poll(() => news(page)).toBe('Renamed note.txt to renamed.txt.');
    await page.waitForSelector('[data-rename="renamed.txt"]');
    expect(existsSync(join(filesRoot, 'box', 'note.txt'))).toBe(false);
    expect(readFileSync(join(filesRoot, 'box', 'renamed.txt'), 'utf8')).toBe('inside the box\n');

    // Out of the files root: refused by the device, said on the page, nothing moved.
    await page.click('[data-rename="renamed.txt"]');
    await page.fill('#rename-name', '../../x');
    await page.click('#rename-confirm');
    await expect.poll(() => page.textContent('#files-status [role=alert]')).toMatch(/^Could not rename renamed\.txt: .*outside the files root/);
    expect(readFileSync(join(filesRoot, 'box', 'renamed.txt'), 'utf8')).toBe('inside the box\n');

    await page.click('#files-path a:text-is("root")');
    await page.waitForSelector('[data-download="box"]');
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-download="box"]')]);
    expect(download.suggestedFilename()).toBe('box.tar');
    const saved = join(tempDir('tether-console-down-'), 'box.tar');
    await download.saveAs(saved);
    const out = tempDir('tether-console-untar-');
    expect((await extractInto(readFileSync(saved), out)).sort()).toEqual(['box/', 'box/renamed.txt']);
    expect(readFileSync(join(out, 'box', 'renamed.txt'), 'utf8')).toBe('inside the box\n');
    await expect.poll(() => news(page)).toBe('Downloaded box as box.tar (1 file, 15 B).');

    await page.click('[data-remove="box"]');
    expect(await page.textContent('#remove')).toContain('the folder box and everything in it');
    expect(existsSync(join(filesRoot, 'box'))).toBe(true); // nothing goes before it is confirmed
    await page.click('#remove-confirm');
    await expect.poll(() => news(page)).toBe('Deleted box.');
    expect(existsSync(join(filesRoot, 'box'))).toBe(false);
    await expect.poll(() => page.locator('[data-remove="box"]').count()).toBe(0);
    await page.close();
  });
});

describe('the terminal', () => {
  const openShells = async () =>
    (await stack.admin.get('/v1/remote-access/sessions?device_id=cf-dev&protocol=shell&status=open')).body.data as Array<{ session_id: string }>;

  it('shows the expiry notice as a banner, reconnects after exit in the same session, and opens a new one once it is closed', async () => {
    const page = await signedIn();
    await page.goto(`${stack.url}/#/terminal/cf-dev`);
    await page.waitForFunction(() => (globalThis as unknown as { tetherTerminal?: unknown }).tetherTerminal);
    await expect.poll(() => terminalText(page)).toMatch(/[$#] $/m); // a prompt
    expect(await page.textContent('#session-expiry')).toMatch(/^The session expires at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}, in (1:00:00|59:\d{2})\.$/);
    const [first] = await openShells();
    expect(first).toBeDefined();

    // The relay's notice, 10 s after the open (TETHER_SESSION_WARNINGS above): a banner, not terminal output.
    await page.waitForSelector('#session-notice:not([hidden])', { timeout: 30_000 });
    expect(await page.getAttribute('#session-notice', 'data-code')).toBe('session_expiring');
    const message = (await page.textContent('#session-notice'))!;
    expect(message).toMatch(/^Session expiring: .*expires in/);
    expect(await terminalText(page)).not.toContain('expires in');

    await page.keyboard.type('exit\n');
    await expect.poll(() => page.textContent('#terminal-status')).toBe('The shell exited with code 0.');
    await page.waitForSelector('#terminal-reconnect');
    expect(await page.textContent('#terminal-again')).toContain('The session is still open');
    await page.click('#terminal-reconnect');
    await expect.poll(() => page.textContent('#terminal-status')).toContain('Connected to cf-dev');
    await page.keyboard.type('echo again-$((40+2))\n');
    await expect.poll(() => terminalText(page)).toMatch(/^again-42$/m);
    expect((await openShells()).map((s) => s.session_id)).toEqual([first!.session_id]); // the same session

    // The session closed under it: a new session, then a new shell.
    expect((await stack.admin.del(`/v1/remote-access/sessions/${first!.session_id}`)).status).toBe(200);
    await expect.poll(() => page.textContent('#terminal-status')).toMatch(/^Disconnected: the session was closed/);
    await page.waitForSelector('#terminal-new-session');
    await page.click('#terminal-new-session');
    await expect.poll(() => page.textContent('#terminal-status')).toContain('Connected to cf-dev');
    await page.keyboard.type('echo fresh-$((40+3))\n');
    await expect.poll(() => terminalText(page)).toMatch(/^fresh-43$/m);
    const now = await openShells();
    expect(now).toHaveLength(1);
    expect(now[0]!.session_id).not.toBe(first!.session_id);
    await page.close();
    await stack.admin.del(`/v1/remote-access/sessions/${now[0]!.session_id}`);
  });
});

describe('the player', () => {
  it('seeks to the middle of a recording, and fits the terminal to the window', async () => {
    for (const s of (await stack.admin.get('/v1/remote-access/sessions?device_id=cf-dev&protocol=shell&status=open')).body.data) {
      await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
    }
    // early, mid 1 s later, late 3 s after that (played as 2: long pauses are shortened).
    const { session, c } = await openRecordedShell(stack, stack.adminToken, 'cf-dev');
    await runInShell(c, 'echo early-$((0+1)); sleep 1; echo mid-$((1+1)); sleep 3; echo late-$((1+2))', /late-3/);
    const recording = await closeAndReadRecording(stack, stack.adminToken, session.session_id, c);
    expect(recording.status).toBe(200);
    // When each came on the player's clock (a loaded machine moves them a little): the middle
    // between mid and late shows early and mid, not yet late.
    const events = timeline(
      recording.text.split('\n').flatMap((l): CastEvent[] => {
        const event = parseCastEvent(l);
        return event ? [event] : [];
      }),
    );
    const when = (marker: RegExp) => events.find((e) => 'write' in e && marker.test(e.write))!.at;
    const middle = (when(/mid-2/) + when(/late-3/)) / 2;
    expect(when(/late-3/) - when(/mid-2/)).toBeCloseTo(2, 1); // 3 s of sleep, shortened

    const page = await signedIn();
    await page.goto(`${stack.url}/#/sessions/${session.session_id}/play`);
    await page.waitForSelector('#seek');
    // Paused (a slow start may find it at its end: Replay, then Pause).
    for (let i = 0; i < 3 && (await page.textContent('#play')) !== 'Play'; i++) await page.click('#play');
    expect(await page.textContent('#play')).toBe('Play');
    const seekTo = (value: number) =>
      page.$eval(
        '#seek',
        (el, v) => {
          // The root tsconfig has no DOM types: the range input as far as this needs it.
          const input = el as unknown as { value: string; dispatchEvent(e: Event): boolean };
          input.value = String(v);
          input.dispatchEvent(new Event('input'));
        },
        value,
      );
    const length = Number(await page.getAttribute('#seek', 'max'));
    expect(length).toBe(lengthOf(events));
    await seekTo(length);
    await expect.poll(() => terminalText(page, 'tetherPlayer')).toMatch(/^late-3$/m);
    await seekTo(middle);
    await expect.poll(() => terminalText(page, 'tetherPlayer')).toMatch(/^mid-2$/m);
    expect(await terminalText(page, 'tetherPlayer')).toMatch(/^early-1$/m);
    expect(await terminalText(page, 'tetherPlayer')).not.toMatch(/^late-3$/m);
    expect(await page.textContent('#player-clock')).toBe(`${clockText(middle)} / ${clockText(length)}`);
    await seekTo(0);
    await expect.poll(() => terminalText(page, 'tetherPlayer')).not.toMatch(/^mid-2$/m);
    await seekTo(length);
    await expect.poll(() => terminalText(page, 'tetherPlayer')).toMatch(/^late-3$/m);

    // The recording keeps its size; the terminal is scaled to whatever window it is in.
    const cols = await page.evaluate(() => (globalThis as unknown as { tetherPlayer: { cols: number } }).tetherPlayer.cols);
    const fits = async (width: number, height: number) => {
      const box = (await page.locator('#player').boundingBox())!;
      return box.x >= 0 && box.y >= 0 && box.x + box.width <= width && box.y + box.height <= height && box.width > 100;
    };
    await expect.poll(() => fits(1280, 800)).toBe(true);
    const big = Number(await page.getAttribute('#player', 'data-scale'));
    await page.setViewportSize({ width: 640, height: 480 });
    await expect.poll(() => fits(640, 480)).toBe(true);
    expect(Number(await page.getAttribute('#player', 'data-scale'))).toBeLessThan(big);
    expect(await page.evaluate(() => (globalThis as unknown as { tetherPlayer: { cols: number } }).tetherPlayer.cols)).toBe(cols);
    await page.close();
  });
});
