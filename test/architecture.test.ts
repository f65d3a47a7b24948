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
