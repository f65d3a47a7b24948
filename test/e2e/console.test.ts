/**
 * The web console (issue 17) in a real browser: the system's Chromium, headless, driven by
 * playwright-core, against a real server and a real agent. Signing in (and a wrong password),
 * presence going offline live, a shell (output read from the terminal's buffer, resize, `yes`
 * then Ctrl-C), a file uploaded and downloaded back byte for byte, a service's canary moved with
 * its slider and promoted (simulated runtime), and a page of another origin refused at the stream. A screenshot of each page goes to test-artifacts/console/.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { launchBrowser, signedInPage, terminalText } from '../helpers/browser';
import { client } from '../helpers/http';
import type { Proc } from '../helpers/processes';
import { serviceSpec } from '../helpers/service-spec';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const ARTIFACTS = resolve(__dirname, '../../test-artifacts/console');
const PASSWORD = 'a console passphrase';

let stack: Stack;
let browser: Browser;
let agent: Proc;
let filesRoot: string;

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  stack = await startStack();
  await stack.admin.post('/v1/users', { username: 'ops-ann', role: 'administrator', password: PASSWORD });
  filesRoot = tempDir('tether-console-files-');
  ({ agent } = await stack.onlineDevice('console-dev', { TETHER_FILES_ROOT: filesRoot }));
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await stack?.stop();
});

/** A fresh page signed in as ops-ann, with the device list shown. */
const signedIn = (viewport = { width: 1280, height: 800 }): Promise<Page> =>
  signedInPage(browser, stack.url, { username: 'ops-ann', password: PASSWORD }, { viewport, acceptDownloads: true, ready: '#device-list table' });

const shot = (page: Page, name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });

describe('signing in', () => {
  it('a wrong password shows an error and no console', async () => {
    const page = await browser.newPage();
    await page.goto(`${stack.url}/`);
    await page.fill('#username', 'ops-ann');
    await page.fill('#password', 'not the password');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('[role=alert]')).toContain('Wrong username or password');
    expect(await page.isHidden('#nav')).toBe(true);
    expect(await page.$('#device-list')).toBeNull();
    await shot(page, 'login-refused');
    await page.close();
  });

  it('the page comes with a strict Content-Security-Policy, and its script renders the sign-in form under it on a cold cache', async () => {
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) violations.push(m.text());
    });
    const response = await page.goto(`${stack.url}/`);
    const csp = response!.headers()['content-security-policy']!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(csp).toContain("frame-ancestors 'none'");
    // The HTML holds only "Loading…": the form is there only when the script ran under that policy.
    expect(await (await fetch(`${stack.url}/`)).text()).not.toContain('id="username"');
    await page.waitForSelector('#username');
    expect(await page.isVisible('#password')).toBe(true);
    expect(await page.textContent('button[type=submit]')).toMatch(/sign in/i);
    expect(await page.textContent('#app')).not.toContain('Loading…');
    expect(violations).toEqual([]);
    await shot(page, 'login');
    await page.close();
  });
});

describe('the console, signed in', () => {
  it('shows the device online, and offline when its agent is killed, without a reload', async () => {
    const page = await signedIn();
    const badge = page.locator('[data-device="console-dev"]');
    await expect.poll(() => badge.textContent()).toBe('online');
    await shot(page, 'devices');
    const phone = await signedIn({ width: 390, height: 844 });
    await shot(phone, 'devices-phone');
    await phone.close();

    const { agent: doomed } = await stack.onlineDevice('console-doomed');
    const other = page.locator('[data-device="console-doomed"]');
    await expect.poll(() => other.textContent(), { timeout: 10_000 }).toBe('online');
    doomed.kill('SIGKILL');
    await expect.poll(() => other.textContent(), { timeout: 10_000 }).toBe('offline');
    await page.close();
  });

  it('shows the device page with its diagnostics and the ways in', async () => {
    const page = await signedIn();
    await page.click('text=console-dev');
    await page.waitForSelector('#diagnostics h2');
    expect(await page.textContent('#diagnostics')).toContain('Interfaces');
    await page.click('#show-forward');
    expect(await page.textContent('#forward-command')).toBe('tether forward console-dev 8080:127.0.0.1:80');
    await shot(page, 'device');
    await page.close();
  });

  it('opens a shell: output in the terminal, resize reaching stty, and yes stopped by Ctrl-C within 2 s', async () => {
    const page = await signedIn();
    await page.goto(`${stack.url}/#/terminal/console-dev`);
    await page.waitForFunction(() => (globalThis as unknown as { tetherTerminal?: unknown }).tetherTerminal);
    await expect.poll(() => terminalText(page)).toMatch(/[$#] $/m); // a prompt
    await page.keyboard.type('echo hello-$((6*7))\n');
    await expect.poll(() => terminalText(page)).toMatch(/^hello-42$/m);
    await shot(page, 'terminal');

    let asked = 0;
    const size = async () => {
      const tag = `sz${++asked}`;
      await page.keyboard.type(`echo "${tag} $(stty size)"\n`);
      const match = await waitFor(async () => new RegExp(`^${tag} (\\d+) (\\d+)$`, 'm').exec(await terminalText(page)), 'stty size');
      return { rows: Number(match[1]), cols: Number(match[2]) };
    };
    const before = await size();
    const dims = () =>
      page.evaluate(() => {
        const t = (globalThis as unknown as { tetherTerminal: { rows: number; cols: number } }).tetherTerminal;
        return { rows: t.rows, cols: t.cols };
      });
    expect(before).toEqual(await dims());
    await page.setViewportSize({ width: 900, height: 600 });
    await expect.poll(dims).not.toEqual(before);
    const after = await size();
    expect(after).toEqual(await dims());
    expect(after.cols).toBeLessThan(before.cols);

    await page.keyboard.type('yes\n');
    await expect.poll(() => terminalText(page)).toMatch(/^y$/m);
    const t0 = Date.now();
    await page.keyboard.press('Control+C');
    await page.keyboard.type('echo back-$((40+2))\n');
    await expect.poll(() => terminalText(page), { timeout: 2000 }).toMatch(/^back-42$/m);
    expect(Date.now() - t0).toBeLessThan(2000);

    await page.keyboard.type('exit 3\n');
    await expect.poll(() => page.textContent('#terminal-status')).toBe('The shell exited with code 3.');
    await page.close();
  });

  it('uploads a file that arrives byte for byte, and downloads it back the same', async () => {
    const page = await signedIn();
    await page.goto(`${stack.url}/#/files/console-dev`);
    await page.waitForSelector('#files-list');
    await page.waitForSelector('#upload-input:not([disabled])'); // the page's file-transfer stream is open
    const content = randomBytes(3 * 1024 * 1024 + 17);
    const local = join(tempDir('tether-console-up-'), 'payload.bin');
    writeFileSync(local, content);
    await page.setInputFiles('#upload-input', local);
    await expect.poll(() => page.textContent('#files-status'), { timeout: 30_000 }).toContain('Uploaded 1 file');
    const stored = readFileSync(join(filesRoot, 'payload.bin'));
    expect(createHash('sha256').update(stored).digest('hex')).toBe(createHash('sha256').update(content).digest('hex'));
    await shot(page, 'files');

    const [download] = await Promise.all([page.waitForEvent('download'), page.click('[data-download="payload.bin"]')]);
    const saved = join(tempDir('tether-console-down-'), 'back.bin');
    await download.saveAs(saved);
    expect(readFileSync(saved).equals(content)).toBe(true);
    await page.close();
  });

  it('lists sessions with their recordings, plays one, and shows the audit', async () => {
    // A shell session of its own, recorded (shells are by default), with output to look for.
    const open = (await stack.admin.get('/v1/remote-access/sessions?device_id=console-dev&protocol=shell&status=open')).body.data as Array<{
      session_id: string;
    }>;
    for (const o of open) await stack.admin.del(`/v1/remote-access/sessions/${o.session_id}`);
    const created = await stack.admin.post('/v1/remote-access/sessions', { device_id: 'console-dev', protocol: 'shell' });
    expect(created.status, created.text).toBe(201);
    const recorded = created.body.data as { session_id: string; websocket_url: string };
    const stream = connectStream(recorded.websocket_url);
    await stream.opened;
    stream.send(Buffer.from('echo played-$((6*7))\n'));
    await stream.waitForOutput(/played-42/);
    stream.ws.close(1000);
    await stream.closed;
    await stack.admin.del(`/v1/remote-access/sessions/${recorded.session_id}`);
    await waitFor(
      async () => (await stack.admin.get(`/v1/remote-access/sessions/${recorded.session_id}`)).body.data.recording?.in_progress === false || undefined,
      'the recording to finish',
    );
    // The recording holds the output (the API's business, checked in recordings.test.ts); what follows is the console's.
    await waitFor(async () => {
      const r = await fetch(`${stack.url}/v1/remote-access/sessions/${recorded.session_id}/recording?format=text`, {
        headers: { authorization: `Bearer ${stack.adminToken}` },
      });
      return r.status === 200 && (await r.text()).includes('played-42');
    }, 'the output in the recording');

    const page = await signedIn();
    await page.goto(`${stack.url}/#/sessions`);
    const play = page.locator(`a[href="#/sessions/${recorded.session_id}/play"]`);
    await play.waitFor();
    expect(await play.textContent()).toMatch(/^Play \(\d+ s\)$/);
    await shot(page, 'sessions');
    await play.click();
    // What the shell printed comes back on the player's screen (xterm's DOM rows), not just an empty terminal.
    const played = () => page.locator('#player .xterm-rows').textContent();
    await expect.poll(played, { timeout: 15_000 }).toContain('played-42');
    expect(await page.textContent('h1')).toContain(recorded.session_id);
    await shot(page, 'player');
    await page.goto(`${stack.url}/#/audit`);
    await page.waitForSelector('#audit-list table');
    expect(await page.textContent('#audit-list')).toContain('recording.viewed');
    await shot(page, 'audit');
    await page.close();
  });
});

describe('services', () => {
  it('lists services per environment, and on a service page moves its canary with the slider, then promotes it', async () => {
    const apply = (yaml: string) => stack.admin.raw('POST', '/v1/services?env=dev', yaml, { 'content-type': 'application/yaml' });
    const service = async () => (await stack.admin.get('/v1/services/shop?env=dev')).body.data;
    const canary = async () => (await stack.admin.get('/v1/services/shop/canary?env=dev')).body.data;
    expect((await apply(serviceSpec({ name: 'shop', replicas: 2 }))).status).toBe(200);
    await waitFor(async () => (await service()).status === 'healthy' || undefined, 'shop v1.0.0 to be healthy');
    expect((await apply(serviceSpec({ name: 'shop', tag: '1.1.0', replicas: 2, strategy: 'canary', weight: 20 }))).status).toBe(200);

    const page = await signedIn();
    await page.click('nav >> text=Services');
    await page.waitForSelector('#services-dev table');
    const row = page.locator('#services-dev tr', { hasText: 'shop' });
    expect(await row.textContent()).toContain('v1.0.0, canary v1.1.0 at 20 %');
    expect(await row.locator('td').nth(4).textContent()).toBe('—'); // the simulated runtime runs no ingress
    await expect.poll(() => page.textContent('[data-service="shop"]')).toBe('healthy');
    await shot(page, 'services');

    await row.locator('a').click();
    await page.waitForSelector('#canary-weight');
    expect(await page.inputValue('#canary-weight')).toBe('20');
    expect(await page.textContent('#canary-split')).toBe('20 % of traffic to the canary v1.1.0, 80 % to the stable v1.0.0.');
    expect(await page.textContent('#service-revisions')).toMatch(/v1\.1\.0canary \(20 %\)/);
    await page.fill('#canary-weight', '30'); // as if dragged there and let go
    await expect.poll(async () => (await canary()).canary?.weight).toBe(30);
    await expect.poll(() => page.textContent('#canary-split')).toBe('30 % of traffic to the canary v1.1.0, 70 % to the stable v1.0.0.');
    expect(await page.textContent('#canary-status')).toBe('The canary takes 30 % of traffic.');
    await shot(page, 'service');

    await page.click('#canary-promote'); // enabled once every replica of the canary is ready
    await expect.poll(canary).toMatchObject({ canary_active: false, stable: { revision: 'v1.1.0', weight: 100 }, canary: null });
    expect(await service()).toMatchObject({ status: 'healthy', current_revision: 'v1.1.0', previous_revision: 'v1.0.0' });
    await expect.poll(() => page.textContent('#canary-split')).toBe('No canary: v1.1.0 takes all traffic. Apply a spec with strategy: canary to start one.');
    expect(await page.isHidden('#canary-weight')).toBe(true);
    await page.close();
  });
});

describe('one shell per device', () => {
  const openShells = async () =>
    (await stack.admin.get('/v1/remote-access/sessions?device_id=console-dev&protocol=shell&status=open')).body.data as Array<{
      session_id: string;
      opened_by: string;
    }>;
  // A page closed without leaving it keeps its session: start each case with the device's shell free.
  beforeEach(async () => {
    for (const s of await openShells()) await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('asks before replacing your own shell (your tether shell, say), and replaces it only when told', async () => {
    const login = await client(stack.url).post('/v1/auth/token', { username: 'ops-ann', password: PASSWORD });
    const ann = client(stack.url, login.body.data.token);
    const cli = (await ann.post('/v1/remote-access/sessions', { device_id: 'console-dev', protocol: 'shell' })).body.data;
    const page = await signedIn();
    await page.goto(`${stack.url}/#/terminal/console-dev`);
    await page.waitForSelector('#replace-session');
    expect(await page.textContent('#replace-session')).toContain('Your shell session on console-dev is already open (opened ');
    await shot(page, 'terminal-replace');
    expect((await openShells()).map((s) => s.session_id)).toEqual([cli.session_id]); // nothing closed while it asks
    await page.click('#replace-cancel');
    await expect.poll(() => page.textContent('#terminal-status')).toContain('stays open');
    expect((await openShells()).map((s) => s.session_id)).toEqual([cli.session_id]);

    await page.goto(`${stack.url}/#/devices`);
    await page.waitForSelector('#device-list table');
    await page.goto(`${stack.url}/#/terminal/console-dev`);
    await page.click('#replace-confirm');
    await expect.poll(() => page.textContent('#terminal-status')).toContain('Connected to console-dev');
    expect((await ann.get(`/v1/remote-access/sessions/${cli.session_id}`)).body.data).toMatchObject({ status: 'closed', close_reason: 'closed' });
    const now = await openShells();
    expect(now).toHaveLength(1);
    expect(now[0]).toMatchObject({ opened_by: 'ops-ann', session_id: expect.not.stringMatching(cli.session_id) });
    await page.close();
  });

  it("names who holds someone else's shell and since when, instead of hanging at 'Opening a shell…'", async () => {
    const bob = client(stack.url, await stack.userToken('pe-bob', 'platform-engineer'));
    const theirs = (await bob.post('/v1/remote-access/sessions', { device_id: 'console-dev', protocol: 'shell' })).body.data;
    const page = await signedIn(); // an administrator, who could close it: the console does not
    await page.goto(`${stack.url}/#/terminal/console-dev`);
    await expect.poll(() => page.textContent('#terminal-status')).toContain('pe-bob holds the shell session on console-dev (opened ');
    expect(await page.$('#replace-session')).toBeNull();
    expect(await page.$('#terminal .xterm')).toBeNull();
    await shot(page, 'terminal-held');
    expect((await openShells()).map((s) => s.session_id)).toEqual([theirs.session_id]);
    await page.close();
    await bob.del(`/v1/remote-access/sessions/${theirs.session_id}`);
  });
});

describe('signing out', () => {
  it('revokes the token the console obtained with the password', async () => {
    const active = async () => ((await stack.admin.get('/v1/tokens?username=ops-ann')).body.data as Array<{ token_id: string }>).map((t) => t.token_id);
    const before = await active();
    const page = await signedIn();
    const mine = (await active()).filter((id) => !before.includes(id));
    expect(mine).toHaveLength(1);
    await page.click('text=Sign out');
    await page.waitForSelector('#username');
    await expect.poll(active).not.toContain(mine[0]);
    expect(await page.evaluate(() => (globalThis as unknown as { sessionStorage: { length: number } }).sessionStorage.length)).toBe(0);
    await page.close();
  });
});

describe('another origin', () => {
  let other: Server;
  afterAll(() => new Promise<void>((r) => other?.close(() => r())));

  it('is not another loopback name of the server: a page at localhost opens a stream of a server on 127.0.0.1', async () => {
    const open = (await stack.admin.get('/v1/remote-access/sessions?device_id=console-dev&protocol=diagnostics&status=open')).body.data as Array<{
      session_id: string;
    }>;
    for (const o of open) await stack.admin.del(`/v1/remote-access/sessions/${o.session_id}`);
    const created = await stack.admin.post('/v1/remote-access/sessions', { device_id: 'console-dev', protocol: 'diagnostics' });
    expect(created.status, created.text).toBe(201);
    const s = created.body.data;
    const base = `http://localhost:${stack.port}`;
    const page = await browser.newPage();
    await page.goto(`${base}/`); // the console's own page, under another name of its host
    const url = new URL(s.websocket_url);
    url.host = `localhost:${stack.port}`; // the page's policy lets it connect to its own host only
    const outcome = await page.evaluate(
      (streamUrl) =>
        new Promise<string>((done) => {
          const ws = new WebSocket(streamUrl);
          ws.onopen = () => done('opened');
          ws.onclose = (e) => done(`closed ${e.code}`);
        }),
      url.href,
    );
    expect(outcome).toBe('opened');
    await page.close();
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });

  it('cannot open a session stream, even with its ticket', async () => {
    const open = (await stack.admin.get('/v1/remote-access/sessions?device_id=console-dev&protocol=shell&status=open')).body.data as Array<{
      session_id: string;
    }>;
    for (const o of open) await stack.admin.del(`/v1/remote-access/sessions/${o.session_id}`);
    const s = (await stack.admin.post('/v1/remote-access/sessions', { device_id: 'console-dev', protocol: 'shell' })).body.data;
    // A page served from another origin tries the stream in a real browser.
    other = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>elsewhere</title>');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const page = await browser.newPage();
    await page.goto(`http://localhost:${(other.address() as { port: number }).port}/`);
    const outcome = await page.evaluate(
      (url) =>
        new Promise<string>((done) => {
          const ws = new WebSocket(url);
          ws.onopen = () => done('opened');
          ws.onclose = (e) => done(`closed ${e.code}`);
        }),
      s.websocket_url,
    );
    expect(outcome).toBe('closed 1006'); // the handshake was refused
    await page.close();
    // What the browser was told, asked by hand: 403.
    const status = await new Promise<number>((done) => {
      const req = request(s.websocket_url.replace(/^ws/, 'http'), {
        headers: {
          connection: 'Upgrade',
          upgrade: 'websocket',
          'sec-websocket-version': '13',
          'sec-websocket-key': randomBytes(16).toString('base64'),
          origin: 'http://evil.example',
        },
      });
      req.on('response', (res) => done(res.statusCode!));
      req.on('upgrade', () => done(101));
      req.end();
    });
    expect(status).toBe(403);
    await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`);
  });
});

afterAll(() => agent?.kill('SIGKILL'));
