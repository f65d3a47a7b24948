/**
 * README.md's quick start, run as written: its shell blocks in one bash against a real
 * `tether server` process (the test starts it where the README says `npm start`), with the real
 * agent, curl and node. Long-running commands (`# runs until Ctrl-C`) run in the background.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startServerProcess } from '../helpers/processes';
import { tempDir } from '../helpers/stack';

const root = resolve(__dirname, '../..');

/** The `sh` blocks of the README section whose heading starts with `heading`. */
export function shellBlocks(readme: string, heading: string): string[] {
  const start = readme.indexOf(`\n## ${heading}`);
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** One bash script: the server line dropped, long-running lines in the background, the port ours. */
function scriptOf(blocks: string[], url: string): string {
  const lines = blocks
    .join('\n')
    .split('\n')
    .filter((line) => !/^npm start\b/.test(line))
    .map((line) => line.replace(/^(.*?)\s+# runs until Ctrl-C$/, '$1 &'))
    .map((line) => line.replaceAll('http://127.0.0.1:8080', url));
  return [
    'set -euo pipefail',
    // An HTTP error fails the script, as a reader would notice it fail; each answer on its line.
    'curl() { command curl --fail-with-body "$@"; echo; }',
    "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
    ...lines,
  ].join('\n');
}

describe('README.md', () => {
  it('the quick start runs as written', async () => {
    const dir = tempDir('tether-readme-');
    mkdirSync(join(dir, 'data'));
    symlinkSync(join(root, 'dist'), join(dir, 'dist'));
    const server = await startServerProcess(join(dir, 'data'));
    const script = scriptOf(shellBlocks(readFileSync(join(root, 'README.md'), 'utf8'), 'Quick start'), server.url);
    const run = spawn('bash', ['-c', script], { cwd: dir, env: { ...process.env, TETHER_SERVER: undefined, TETHER_TOKEN: undefined } });
    let stdout = '';
    let stderr = '';
    run.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    run.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((done) => run.once('exit', done));
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    const answers = stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l));
    expect(answers).toMatchObject([
      { status: 201, data: { device_id: 'my-laptop', agent_status: 'offline', agent_token: expect.stringMatching(/^tdev_/) } },
      { status: 200, data: { device_id: 'my-laptop', agent_status: 'online' } },
      { status: 201, data: { status: 'open', websocket_url: expect.stringContaining('/stream?ticket=') } },
      { status: 200, data: { status: 'closed', close_reason: 'closed' } },
      { status: 200, data: [{ event: 'session.closed' }, { event: 'session.opened' }], meta: { total: 2 } },
      { status: 201, data: { username: 'ann@example.com', role: 'platform-engineer' } },
      { status: 200, data: { token: expect.stringMatching(/^tth_/) } },
    ]);
    await server.proc.stop();
  });
});
