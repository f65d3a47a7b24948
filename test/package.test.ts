/**
 * The package an operator installs (`npm pack`, then `npm install -g` of the tarball): it is
 * named so that it cannot be confused with another registry package, puts `tether` on PATH, and
 * holds the built client, server and agent bundle, the unit files and the docs.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '..');

describe('the package', () => {
  it('is tether-relay with the tether command, and packs what an installation needs', () => {
    const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8'));
    // `tether` on the npm registry is an unrelated library.
    expect(pkg.name).toBe('tether-relay');
    expect(pkg.bin).toEqual({ tether: 'dist/tether.cjs' });
    const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const files = (JSON.parse(out) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
    for (const needed of [
      'dist/tether.cjs',
      'dist/tether-main.cjs',
      'dist/tether-agent.js',
      'dist/package.json',
      'deploy/tether-server.service',
      'deploy/tether-agent.service',
      'docs/http-api.md',
      'README.md',
    ]) {
      expect(files).toContain(needed);
    }
    // nothing of the development tree: sources, tests, benchmarks, maps
    expect(files.filter((f) => /\.ts$|\.map$|^test\/|^bench|^dist\/(bench|soak)/.test(f))).toEqual([]);
  });

  it('answers --version from the launcher alone, without loading the rest of the command', () => {
    // The launcher copied without tether-main.cjs beside it: --version needs nothing else.
    const dir = mkdtempSync(join(tmpdir(), 'tether-launcher-'));
    try {
      copyFileSync(resolve(root, 'dist/tether.cjs'), join(dir, 'tether.cjs'));
      const pkg = JSON.parse(readFileSync(resolve(root, 'package.json'), 'utf8'));
      for (const flag of ['--version', '-V']) {
        expect(execFileSync(process.execPath, [join(dir, 'tether.cjs'), flag], { encoding: 'utf8' })).toBe(`${pkg.version}\n`);
      }
      expect(() => execFileSync(process.execPath, [join(dir, 'tether.cjs'), '--help'], { stdio: 'ignore' })).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // and the real thing answers the same
    expect(execFileSync(process.execPath, [resolve(root, 'dist/tether.cjs'), '--version'], { encoding: 'utf8' }).trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
