// Builds the runnable bundles into dist/: the `tether` command (server, agent, client) and the
// single-file device agent. Dependencies stay external in the main bundle (they are installed
// beside it); the agent bundle inlines everything but native modules (README, installing the
// agent on a device).
import { build } from 'esbuild';
import { chmod, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';

const { version } = JSON.parse(await readFile('package.json', 'utf8'));

// `tether` itself is a launcher: `tether --version` answers without loading the client, the
// server or the agent (scripts and packagers ask it often; loading the bundle doubled its time),
// and `tether agent` runs the lean agent bundle, so that a device's agent holds nothing else.
const LAUNCHER = `#!/usr/bin/env node
// The tether command (built by scripts/build.mjs): --version answers here, 'tether agent' is
// tether-agent.js, the rest is tether-main.cjs.
'use strict';
const args = process.argv.slice(2);
if (args.length === 1 && (args[0] === '--version' || args[0] === '-V')) process.stdout.write(${JSON.stringify(`${version}
`)});
else if (args[0] === 'agent') require('./tether-agent.js');
else require('./tether-main.cjs');
`;

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: 'linked',
  logLevel: 'warning',
};

await mkdir('dist', { recursive: true });
// dist/ is CommonJS whatever the root package says, so the bundles also run copied elsewhere.
await writeFile('dist/package.json', '{ "type": "commonjs" }\n');
await Promise.all([
  build({
    ...common,
    entryPoints: ['cmd/tether.ts'],
    outfile: 'dist/tether-main.cjs',
    packages: 'external',
  }),
  writeFile('dist/tether.cjs', LAUNCHER),
  build({
    ...common,
    entryPoints: { bench: 'bench/main.ts', 'bench-swarm': 'bench/swarm.ts', soak: 'bench/soak.ts' },
    outdir: 'dist',
    outExtension: { '.js': '.cjs' },
    packages: 'external',
  }),
  build({
    ...common,
    entryPoints: ['cmd/agent-main.ts'],
    outfile: 'dist/tether-agent.js',
    // Native modules cannot be bundled; ws loads bufferutil/utf-8-validate when they are installed
    // (tether does not install them: see the note on masking in shared/websocket/mask.ts).
    external: ['node-pty', 'bufferutil', 'utf-8-validate'],
    banner: { js: '#!/usr/bin/env node' },
  }),
]);
// The web console: one script and one stylesheet under content-hashed names (cached for good),
// each beside its gzipped copy, and the page that names them (docs/console.md).
await rm('dist/console', { recursive: true, force: true });
const web = await build({
  entryPoints: { app: 'console/src/main.ts' },
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: ['chrome109', 'firefox115', 'safari16'],
  minify: true,
  legalComments: 'none',
  outdir: 'dist/console/assets',
  entryNames: '[name]-[hash]',
  metafile: true,
  logLevel: 'warning',
});
const assets = Object.keys(web.metafile.outputs);
const named = (ext) => basename(assets.find((path) => path.endsWith(ext)));
const page = (await readFile('console/index.html', 'utf8')).replace('{{js}}', named('.js')).replace('{{css}}', named('.css'));
await writeFile('dist/console/index.html', page);
for (const name of await readdir('dist/console/assets')) {
  const path = `dist/console/assets/${name}`;
  await writeFile(`${path}.gz`, gzipSync(await readFile(path), { level: 9 }));
}
await writeFile('dist/console/index.html.gz', gzipSync(page, { level: 9 }));

// The OpenAPI document, from the same schemas the server validates with (shared/api/, every
// feature's table in api/operations.ts): a tiny bundle that builds it, run here, so
// docs/openapi.json is what this build serves.
await build({
  ...common,
  sourcemap: false,
  stdin: {
    contents: "export { buildApiDocument, serializeDocument } from './api/operations';",
    resolveDir: '.',
    loader: 'ts',
  },
  outfile: 'dist/openapi.cjs',
  packages: 'external',
});
const openapi = createRequire(import.meta.url)('../dist/openapi.cjs');
await writeFile('docs/openapi.json', openapi.serializeDocument(openapi.buildApiDocument()));

// Both bundles are commands: `npx tether`, `./tether-agent.js`.
await Promise.all([chmod('dist/tether.cjs', 0o755), chmod('dist/tether-agent.js', 0o755)]);
