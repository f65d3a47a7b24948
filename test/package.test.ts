/**
 * The package an operator installs (`npm pack`, then `npm install -g` of the tarball): it is
 * named so that it cannot be confused with another registry package, puts `tether` on PATH, and
 * holds the built client, server and agent bundle, the unit files and the docs.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
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
    for (const needed of ['dist/tether.cjs', 'dist/tether-agent.js', 'dist/package.json', 'deploy/tether-server.service', 'deploy/tether-agent.service', 'docs/http-api.md', 'README.md']) {
      expect(files).toContain(needed);
    }
    // nothing of the development tree: sources, tests, benchmarks, maps
    expect(files.filter((f) => /\.ts$|\.map$|^test\/|^bench|^dist\/(bench|soak)/.test(f))).toEqual([]);
  });
});
