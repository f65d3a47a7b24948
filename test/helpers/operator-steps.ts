/**
 * What the backup tests run as an operator would (test/e2e/backup.test.ts): the shell steps of a
 * README section with the output lines under them, docs/backup.md's systemd unit's commands, a
 * shell with none of the server's settings, and recorded shell sessions to back up.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { expect } from 'vitest';
import { client, type Client } from './http';
import { openRecordedShell, runInShell } from './recorded-shell';
import { waitFor } from './wait';

const root = resolve(__dirname, '../..');

/** The `sh` blocks of README.md's section `heading` (as test/e2e/readme.test.ts reads them). */
export function readmeBlocks(heading: string): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const start = readme.indexOf(`\n## ${heading}`);
  expect(start, `README section ${heading}`).toBeGreaterThan(-1);
  const end = readme.indexOf('\n## ', start + 1);
  return [...readme.slice(start, end === -1 ? undefined : end).matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

/** A README command and the `# …` output lines under it, as patterns with the numbers left free. */
export interface Step {
  command: string;
  expected: RegExp[];
}

export function stepsOf(blocks: string[], paths: Record<string, string>): Step[] {
  const mapped = (text: string) => Object.entries(paths).reduce((t, [from, to]) => t.replaceAll(from, to), text);
  const steps: Step[] = [];
  for (const line of blocks.join('\n').split('\n')) {
    if (line.startsWith('# ')) {
      const pattern = mapped(line.slice(2))
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replace(/\d+/g, '\\d+');
      steps.at(-1)!.expected.push(new RegExp(`^${pattern}$`));
    } else if (line.trim() !== '') {
      steps.push({ command: mapped(line.replace(/\s+#.*$/, '').replace(/^sudo /, '')), expected: [] });
    }
  }
  return steps;
}

/** The ExecStart and ExecStartPost lines of docs/backup.md's unit, its paths mapped, systemd's `%%` and `$$` unescaped. */
export function unitLines(dataDir: string, backups: string): Array<[string, string]> {
  const doc = readFileSync(join(root, 'docs', 'backup.md'), 'utf8');
  const lines = [...doc.matchAll(/^(ExecStart|ExecStartPost)=(.*)$/gm)].map((m) => [m[1]!, m[2]!] as [string, string]);
  expect(lines.map(([key]) => key)).toEqual(['ExecStart', 'ExecStartPost']);
  return lines.map(([key, line]) => [
    key,
    line.replaceAll('/var/backups/tether', backups).replaceAll('/var/lib/tether', dataDir).replaceAll('%%', '%').replaceAll('$$', '$'),
  ]);
}

/** `bash -c command` with `tether` on PATH and none of the server's settings (an operator's shell on the host). */
export function runCommand(command: string, bin: string): { code: number | null; stdout: string[]; stderr: string } {
  const env: NodeJS.ProcessEnv = { PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`, HOME: process.env.HOME };
  const run = spawnSync('bash', ['-c', command], { env, encoding: 'utf8', timeout: 60_000 });
  return { code: run.status, stdout: run.stdout.split('\n').filter((l) => l !== ''), stderr: run.stderr };
}

/** A shell session on `device` that printed `marker` (a recorded session); `close`: ended and its recording finished. */
export async function recordedShell(server: { url: string; admin: Client; token: string }, device: string, command: string, marker: RegExp, close: boolean) {
  const as = { as: (t: string) => client(server.url, t) };
  const { session, c } = await openRecordedShell(as, server.token, device);
  await runInShell(c, command, marker);
  const id = session.session_id;
  if (close) {
    expect((await server.admin.del(`/v1/remote-access/sessions/${id}`)).status).toBe(200);
    await c.closed;
    await waitFor(async () => (await server.admin.get(`/v1/remote-access/sessions/${id}`)).body.data.recording?.in_progress === false, 'the recording');
  } else {
    // a batch holding the marker is on disk (batches go every 250 ms)
    await waitFor(async () => marker.test((await server.admin.get(`/v1/remote-access/sessions/${id}/recording?format=text`)).text), 'the batch');
  }
  return { id, c };
}
