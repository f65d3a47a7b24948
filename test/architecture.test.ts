/**
 * Keeps the codebase honest (STYLE.md): agent/, broker/, api/ and the client cli/ import only
 * shared/ and packages, never each other; shared/ imports none of them.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '..');
const ROLES = ['agent', 'broker', 'api', 'cli', 'shared'] as const;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from|import)\s*\(?\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!);
}

describe('dependency direction', () => {
  for (const role of ROLES) {
    it(`${role}/ imports only ${role === 'shared' ? 'itself' : 'itself and shared/'}`, () => {
      const offending: string[] = [];
      for (const file of sourceFiles(join(root, role))) {
        for (const spec of importsOf(file)) {
          if (!spec.startsWith('.')) continue;
          const target = relative(root, resolve(file, '..', spec)).split('/')[0]!;
          const allowed = role === 'shared' ? ['shared', 'package.json'] : [role, 'shared', 'package.json'];
          if (!allowed.includes(target)) offending.push(`${relative(root, file)} -> ${spec}`);
        }
      }
      expect(offending).toEqual([]);
    });
  }
});

/** The api/ modules a file imports, as paths under api/ (`http/auth.ts`, `store/index.ts` ...). */
function apiImportsOf(file: string): string[] {
  return importsOf(file)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => relative(join(root, 'api'), resolve(file, '..', spec)))
    .filter((target) => !target.startsWith('..'));
}

const FEATURES = ['sessions', 'identity', 'devices', 'deployments', 'fleet'];
/** The files of a feature that speak HTTP: its routes and its envelope. */
const HTTP_FACING = new Set(['routes.ts', 'envelope.ts']);

describe('api/ by feature', () => {
  it('the shared HTTP layer imports no feature', () => {
    const offending = sourceFiles(join(root, 'api', 'http')).flatMap((file) =>
      apiImportsOf(file)
        .filter((target) => FEATURES.includes(target.split('/')[0]!))
        .map((target) => `${relative(root, file)} -> api/${target}`),
    );
    expect(offending).toEqual([]);
  });

  it("a feature's logic does not import the HTTP layer (only its routes and envelope do)", () => {
    const offending = FEATURES.flatMap((feature) =>
      sourceFiles(join(root, 'api', feature))
        .filter((file) => !HTTP_FACING.has(file.split('/').at(-1)!))
        .flatMap((file) =>
          apiImportsOf(file)
            .filter((target) => target.startsWith('http/'))
            .map((target) => `${relative(root, file)} -> api/${target}`),
        ),
    );
    expect(offending).toEqual([]);
  });
});
