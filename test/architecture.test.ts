/**
 * Keeps the codebase honest (STYLE.md): agent/, broker/, api/ and the client cli/ import only
 * shared/ and packages, never each other; shared/ imports none of them. The device agent's
 * bundle stays free of classic zod.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '..');
const ROLES = ['agent', 'broker', 'api', 'cli', 'shared', 'console', 'cluster'] as const;

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

/** The agent bundle as scripts/build.mjs makes it, described: every module in it and the bytes each adds. */
async function agentBundle(): Promise<Metafile> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: ['cmd/agent-main.ts'],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    external: ['node-pty', 'bufferutil', 'utf-8-validate'],
    write: false,
    metafile: true,
    logLevel: 'error',
  });
  return result.metafile;
}

// Issue 14, the agent's idle memory: classic zod put 756 KB in the agent bundle and 11 MB in an
// idle agent's RSS; the same schemas written with zod/mini cost about 1.3 MB. So every module the
// agent reaches (agent/, and the shared/ modules it imports) imports 'zod/mini', never 'zod'.
/** A bundle input's path from `node_modules/` on (esbuild names it relative to where node_modules really is). */
const packagePath = (path: string): string => (path.includes('node_modules/') ? path.slice(path.indexOf('node_modules/')) : path);

describe('the agent bundle', () => {
  it("holds no classic zod: the modules it includes import 'zod/mini', never 'zod'", async () => {
    const { inputs } = await agentBundle();
    expect(inputs).toHaveProperty(['cmd/agent-main.ts']);
    const importingZod = Object.entries(inputs)
      .filter(([, input]) => input.imports.some((i) => packagePath(i.path) === 'node_modules/zod/index.js'))
      .map(([path]) => path);
    expect(importingZod).toEqual([]);
    expect(Object.keys(inputs).filter((path) => packagePath(path).startsWith('node_modules/zod/v4/classic/'))).toEqual([]);
  });

  // commander, and the child_process it loads, cost an idle agent 3 MiB; util.parseArgs reads the
  // same option table (cmd/agent-args.ts).
  it('holds no option library', async () => {
    const { inputs } = await agentBundle();
    expect(Object.keys(inputs).filter((path) => packagePath(path).startsWith('node_modules/commander/'))).toEqual([]);
  });

  // A locale holds kilobytes of messages; the index that re-exports them leaves a few bytes.
  it("holds zod's English messages only, not every locale", async () => {
    const [output] = Object.values((await agentBundle()).outputs);
    const locales = Object.entries(output!.inputs)
      .filter(([path, input]) => packagePath(path).startsWith('node_modules/zod/v4/locales/') && input.bytesInOutput > 1024)
      .map(([path]) => packagePath(path));
    expect(locales).toEqual(['node_modules/zod/v4/locales/en.js']);
  });
});
