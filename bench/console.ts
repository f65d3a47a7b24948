/**
 * @module Section `console` (issue 17): how fast the web console paints and how much it weighs.
 * A headless Chromium (the system's package; a full run as root installs it) opens the console
 * with a cold cache, five times: the first contentful paint and the moment the sign-in form is
 * there. And the gzipped size of every script the console loads.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { median, round, type Result, type ServerProcess } from './lib';

const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
const RUNS = 5;

function chromiumPath(mayInstall: boolean): string | undefined {
  const found = () => CHROMIUM.find((p) => existsSync(p));
  if (found() || !mayInstall || process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return found();
  process.stderr.write('bench: installing chromium for the console figures\n');
  spawnSync('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], {
    stdio: 'ignore',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return found();
}

export async function consoleBench(server: ServerProcess, quick: boolean): Promise<Result[]> {
  const assets = resolve(__dirname, 'console', 'assets');
  const gz = (ext: string) =>
    readdirSync(assets)
      .filter((f) => f.endsWith(`${ext}.gz`))
      .reduce((n, f) => n + statSync(join(assets, f)).size, 0);
  const results: Result[] = [
    { section: 'console', name: 'scripts, gzipped', value: round(gz('.js') / 1024, 1), unit: 'KiB', target: '<= 400', met: gz('.js') <= 400 * 1024 },
    { section: 'console', name: 'stylesheet, gzipped', value: round(gz('.css') / 1024, 1), unit: 'KiB', target: 'reported', met: null },
  ];
  const executablePath = chromiumPath(!quick);
  if (!executablePath) {
    results.push({ section: 'console', name: 'first paint (no chromium installed)', value: 'skipped', unit: '-', target: '-', met: null });
    return results;
  }
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const paints: number[] = [];
  const ready: number[] = [];
  try {
    for (let i = 0; i < (quick ? 1 : RUNS); i++) {
      const context = await browser.newContext(); // a cold cache each time
      const page = await context.newPage();
      const t0 = performance.now();
      await page.goto(`${server.url}/`);
      await page.waitForSelector('#username');
      ready.push(performance.now() - t0);
      const fcp = await page.evaluate(() => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? -1);
      paints.push(fcp);
      await context.close();
    }
  } finally {
    await browser.close();
  }
  results.push(
    {
      section: 'console',
      name: `first contentful paint, cold cache (median of ${paints.length})`,
      value: round(median(paints), 0),
      unit: 'ms',
      target: '< 1000',
      met: median(paints) < 1000,
    },
    { section: 'console', name: 'sign-in form ready, from navigation', value: round(median(ready), 0), unit: 'ms', target: 'reported', met: null },
  );
  return results;
}
