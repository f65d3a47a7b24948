// Bundles bench/main.ts (TypeScript) with esbuild and runs it: `npm run bench`.
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';

await build({
  entryPoints: ['bench/main.ts'],
  outfile: 'dist/bench.cjs',
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  packages: 'external',
  logLevel: 'warning',
});
const run = spawnSync(process.execPath, ['dist/bench.cjs', ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
