/**
 * The system's Chromium, headless, driven by playwright-core, for the web console's tests; and the
 * console's password sign-in, which every such test starts with.
 */
import { chromium, type Browser, type Page } from 'playwright-core';
import { systemProgram } from './system-program';

/** Starts Chromium (installed with apt-get when missing and running as root); close it in teardown. */
export function launchBrowser(): Promise<Browser> {
  const executablePath = systemProgram(['/usr/bin/chromium', '/usr/bin/chromium-browser'], 'chromium', 'The web console tests');
  return chromium.launch({
    executablePath,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

/** Fills the console's sign-in form on a page already at the console and submits it. */
export async function signInWithPassword(page: Page, username: string, password: string): Promise<void> {
  await page.fill('#username', username);
  await page.fill('#password', password);
  await page.click('button[type=submit]');
}

/** A page whose uncaught script errors fail the test instead of passing unnoticed. */
export async function strictPage(browser: Browser, options: Parameters<Browser['newPage']>[0] = {}): Promise<Page> {
  const page = await browser.newPage(options);
  page.on('pageerror', (err) => {
    throw err;
  });
  return page;
}

/**
 * A fresh strict page (a cold cache, nothing stored) at the console served from `url`, signed in
 * with a password; resolves once the selector `ready` shows, the sign-in done.
 */
export async function signedInPage(
  browser: Browser,
  url: string,
  credentials: { username: string; password: string },
  { ready, ...options }: { ready: string } & Parameters<Browser['newPage']>[0],
): Promise<Page> {
  const page = await strictPage(browser, options);
  await page.goto(`${url}/`);
  await signInWithPassword(page, credentials.username, credentials.password);
  await page.waitForSelector(ready);
  return page;
}

type XtermBuffer = { active: { length: number; getLine(i: number): { translateToString(trim: boolean): string } | undefined } };

/** What an xterm.js terminal of the page shows, line by line: the shell's (`tetherTerminal`) or the player's (`tetherPlayer`). */
export function terminalText(page: Page, which: 'tetherTerminal' | 'tetherPlayer' = 'tetherTerminal'): Promise<string> {
  return page.evaluate((name) => {
    const b = (globalThis as unknown as Record<string, { buffer: XtermBuffer }>)[name]!.buffer.active;
    const lines: string[] = [];
    for (let i = 0; i < b.length; i++) lines.push(b.getLine(i)?.translateToString(true) ?? '');
    return lines.join('\n');
  }, which);
}
