/**
 * Keeps the codebase honest (STYLE.md): agent/, relay/, api/, cluster/ and the client cli/ import only
 * shared/ and packages, never each other; shared/ imports none of them. No two folders and no two
 * files import each other, directly or around a ring (types included: a cycle over a type is
 * still a knot), and nothing outside test/ imports test/. The device agent's bundle stays free
 * of classic zod.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '..');
const ROLES = ['agent', 'relay', 'api', 'cli', 'shared', 'console', 'cluster'] as const;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** What a file imports or re-exports: `import … from`, `export … from`, `import '…'`, `import('…')`. */
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

const FEATURES = ['sessions', 'identity', 'devices', 'services', 'fleet'];
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

/** Folders that hold no product code: packages, build output, docs, test results, and the tests themselves. */
const NOT_PRODUCT = new Set(['node_modules', 'dist', 'docs', 'deploy', 'test', 'test-artifacts']);
const CODE = /\.(ts|mts|cts|js|mjs|cjs)$/;

/** Every code file of the repository outside test/ (cmd/, bench/, scripts/, console/ included), absolute. */
function productFiles(dir = root): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name.startsWith('.') || (dir === root && NOT_PRODUCT.has(name)) || name === 'node_modules') return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return productFiles(path);
    return CODE.test(name) && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The file a relative import names (`./x` → `x.ts`, `x/index.ts`, `x.js` written for `x.ts`), or undefined. */
function resolveImport(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  const candidates = [base, `${base}.ts`, `${base}.mts`, join(base, 'index.ts'), base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts')];
  return candidates.find((c) => existsSync(c) && statSync(c).isFile());
}

/** The repository's import graph over product files: file → the files it imports (relative paths from the root). */
function importGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of productFiles()) {
    const targets = new Set<string>();
    for (const spec of importsOf(file)) {
      if (!spec.startsWith('.')) continue;
      const target = resolveImport(file, spec);
      if (target) targets.add(relative(root, target));
    }
    graph.set(relative(root, file), targets);
  }
  return graph;
}

/** The strongly connected components of a graph with more than one node, or one node importing itself (Tarjan). */
function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  function visit(v: string): void {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || graph.get(v)?.has(v)) found.push(component.sort());
  }
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** A cycle written as the imports that make it: `a -> b` for every edge inside the component, from `graph`. */
function edgesWithin(component: readonly string[], graph: ReadonlyMap<string, ReadonlySet<string>>, why?: (from: string, to: string) => string): string[] {
  const members = new Set(component);
  return component.flatMap((from) =>
    [...(graph.get(from) ?? [])].filter((to) => members.has(to)).map((to) => `${from} -> ${to}${why ? ` (${why(from, to)})` : ''}`),
  );
}

const folderOf = (file: string): string => dirname(file).split(sep).join('/');

describe('no import cycles', () => {
  // Checks the checker: a ring, a pair, a self-import and a chain.
  it('finds rings, pairs and self-imports, and nothing in a chain', () => {
    const g = (edges: Record<string, string[]>) => new Map(Object.entries(edges).map(([k, v]) => [k, new Set(v)]));
    expect(cycles(g({ a: ['b'], b: ['c'], c: ['a'], d: ['a'] }))).toEqual([['a', 'b', 'c']]);
    expect(cycles(g({ a: ['b'], b: ['a'], c: ['c'] }))).toEqual([['a', 'b'], ['c']]);
    expect(cycles(g({ a: ['b'], b: ['c'], c: [] }))).toEqual([]);
  });

  it('between files: no file reaches itself through its imports (type imports count)', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(100); // the walk found the code
    expect(cycles(graph).map((c) => edgesWithin(c, graph))).toEqual([]);
  });

  // A folder may use what a folder above it holds in common (api/store/ the roles in api/roles.ts,
  // relay/hop/ relay/reject.ts: STYLE's `socketServer.ts` beside `socketServer/`); any other
  // import between folders counts, and must not come back around. A cycle through a parent's
  // file is a cycle between files, which the test above finds.
  it('between folders: no folder imports one that imports it back, directly or around a ring', () => {
    const files = importGraph();
    const folders = new Map<string, Set<string>>();
    /** For the message: one file import behind each folder import. */
    const example = new Map<string, string>();
    for (const [file, targets] of files) {
      const from = folderOf(file);
      if (!folders.has(from)) folders.set(from, new Set());
      for (const target of targets) {
        const to = folderOf(target);
        if (to === from || from.startsWith(`${to}/`)) continue;
        folders.get(from)!.add(to);
        if (!example.has(`${from}\n${to}`)) example.set(`${from}\n${to}`, `${file} -> ${target}`);
      }
    }
    expect(cycles(folders).map((c) => edgesWithin(c, folders, (from, to) => example.get(`${from}\n${to}`)!))).toEqual([]);
  });
});

describe('the tests stay out of the product', () => {
  it('nothing outside test/ (bench/, scripts/ and cmd/ included) imports a file under test/', () => {
    const offending = [...importGraph()].flatMap(([file, targets]) =>
      [...targets].filter((target) => target.split(sep)[0] === 'test').map((target) => `${file} -> ${target}`),
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
