// Builds the runnable bundles into dist/: the `tether` command (server, agent, client) and the
// single-file device agent. Dependencies stay external in the main bundle (they are installed
// beside it); the agent bundle inlines everything but native modules (README, installing the
// agent on a device).
import { build } from 'esbuild';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';

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
    // (tether does not install them: see the note on masking in shared/ws-mask.ts).
    external: ['node-pty', 'bufferutil', 'utf-8-validate'],
    banner: { js: '#!/usr/bin/env node' },
  }),
]);
// Both bundles are commands: `npx tether`, `./tether-agent.js`.
await Promise.all([chmod('dist/tether.cjs', 0o755), chmod('dist/tether-agent.js', 0o755)]);
