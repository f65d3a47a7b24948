// Builds the agent as one executable (Node's single-executable applications, node-pty inside)
// and a Debian package around it: dist/tether-agent-linux-x64 and
// dist/tether-agent_VERSION_amd64.deb (CONTRACT 10.4, docs/agent-package.md). Run after
// scripts/build.mjs (`npm run package` does both).
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { chmod, copyFile, mkdir, mkdtemp, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(repo, 'dist');
// A work directory of this run's own, outputs renamed into place: two runs at once (the test
// projects run the packaging test side by side) never see each other's half-written files.
await mkdir(dist, { recursive: true });
const work = await mkdtemp(join(dist, '.package-'));
process.once('exit', () => rmSync(work, { recursive: true, force: true }));
const { version } = JSON.parse(await readFile(join(repo, 'package.json'), 'utf8'));
const require = createRequire(import.meta.url);
const ptyDir = dirname(require.resolve('node-pty/package.json'));
// Output is kept for errors only: postject's LIEF warns about every note section of node's binary.
const run = (cmd, args, opts = {}) => execFileSync(cmd, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'], ...opts });

// node-pty's JS is bundled; its `./utils` (which requires build/Release/pty.node beside the
// script) is replaced by cmd/sea/pty-utils.ts, which loads the copy carried as a SEA asset.
const ptyNative = {
  name: 'pty-native-from-sea-asset',
  setup(b) {
    b.onResolve({ filter: /^\.\/utils$/ }, (args) =>
      args.importer.startsWith(join(ptyDir, 'lib')) ? { path: join(repo, 'cmd', 'sea', 'pty-utils.ts') } : undefined,
    );
  },
};

// A SEA's main script on Node 20 is one CommonJS file that may require only built-in modules.
await build({
  entryPoints: [join(repo, 'cmd', 'agent-main.ts')],
  outfile: join(work, 'agent.cjs'),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
  // ws asks for these optional native helpers inside try/catch: absent, it uses its own code.
  external: ['bufferutil', 'utf-8-validate'],
  plugins: [ptyNative],
});
const config = {
  main: join(work, 'agent.cjs'),
  output: join(work, 'agent.blob'),
  disableExperimentalSEAWarning: true,
  // The code cache spares compiling the agent at each start, at no cost in idle memory; a startup
  // snapshot cost 6 MiB more of it (BENCHMARKS.md, "The agent as one file (issue 32)").
  useSnapshot: false,
  useCodeCache: true,
  assets: { 'pty.node': join(ptyDir, 'build', 'Release', 'pty.node') },
};
await writeFile(join(work, 'sea-config.json'), JSON.stringify(config, null, 2));
run(process.execPath, ['--experimental-sea-config', join(work, 'sea-config.json')]);

const exe = join(work, 'tether-agent-linux-x64');
await copyFile(process.execPath, exe);
await chmod(exe, 0o755);
// The node binary's symbol table and debug sections (10 MB) serve no device; its dynamic symbols,
// which pty.node links against, and the SEA fuse stay. Without `strip` it is only bigger.
try {
  run('strip', ['--strip-all', exe], { stdio: 'ignore' });
} catch {
  process.stderr.write('package: strip not available, the executable keeps its debug sections\n');
}
run(process.execPath, [
  require.resolve('postject/dist/cli.js'),
  exe,
  'NODE_SEA_BLOB',
  config.output,
  '--sentinel-fuse',
  'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
]);
const printed = run(exe, ['--version'], { env: { PATH: '/usr/bin:/bin' } })
  .toString()
  .trim();
if (printed !== version) throw new Error(`the executable printed ${JSON.stringify(printed)} for --version, not ${version}`);

const { buildDeb } = await import('./package-deb.mjs');
const deb = await buildDeb({ exe, version, src: join(repo, 'deploy', 'debian'), work });
const outputs = [join(dist, 'tether-agent-linux-x64'), join(dist, basename(deb))];
await rename(exe, outputs[0]);
await rename(deb, outputs[1]);
for (const file of outputs) process.stdout.write(`${file.slice(repo.length + 1)}: ${((await stat(file)).size / 1048576).toFixed(1)} MiB\n`);
