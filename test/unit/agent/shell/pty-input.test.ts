/**
 * Keystrokes into a real PTY (node-pty) through the agent's direct writer: input goes in at
 * once while there is room, a paste the program does not read waits in order and stops the
 * caller reading, and nothing goes in once the input is closed.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as pty from 'node-pty';
import { afterEach, describe, expect, it } from 'vitest';
import { createPtyInput } from '../../../../agent/shell/pty-input';
import { tempDir } from '../../../helpers/stack';
import { waitFor } from '../../../helpers/wait';

const terms: pty.IPty[] = [];
afterEach(() => {
  for (const term of terms.splice(0)) term.kill('SIGKILL');
});

/**
 * A PTY in raw mode (bytes pass unchanged, no echo) whose program copies the first `bytes` bytes
 * of its input to a file and exits; resolves once the program is ready to read.
 */
async function rawReader(bytes: number) {
  const out = join(tempDir('tether-pty-'), 'received');
  const term = pty.spawn('/bin/sh', ['-c', `stty raw -echo && printf READY && exec head -c ${bytes} > "${out}"`], {
    cols: 80,
    rows: 24,
    encoding: null,
  });
  terms.push(term);
  let output = '';
  term.onData((data: string | Buffer) => (output += data.toString()));
  let exitCode: number | undefined;
  term.onExit((e) => (exitCode = e.exitCode));
  await waitFor(() => output.includes('READY'), 'the program to switch its terminal to raw mode');
  return {
    term,
    /** What the program read, once it has read all it wanted. */
    async received(): Promise<Buffer> {
      await waitFor(() => exitCode !== undefined, 'the program to read its input and exit');
      expect(exitCode).toBe(0);
      return readFileSync(out);
    },
  };
}

describe('PTY input', () => {
  it('writes keystrokes at once while the PTY has room, without stopping the caller', async () => {
    const reader = await rawReader(6);
    const events: string[] = [];
    const input = createPtyInput(
      reader.term,
      () => events.push('blocked'),
      () => events.push('drained'),
    );
    for (const key of ['l', 's', ' ', '-', 'l', '\r']) input.write(Buffer.from(key));
    expect((await reader.received()).toString()).toBe('ls -l\r');
    expect(events).not.toContain('blocked');
    input.close();
  });

  it('holds a paste the program does not read, stops the caller, and lets it go in whole and in order', async () => {
    const paste = randomBytes(1024 * 1024);
    const reader = await rawReader(paste.length);
    process.kill(reader.term.pid, 'SIGSTOP'); // the program reads nothing until it continues
    const events: string[] = [];
    const input = createPtyInput(
      reader.term,
      () => events.push('blocked'),
      () => events.push('drained'),
    );
    input.write(paste.subarray(0, 512 * 1024));
    input.write(paste.subarray(512 * 1024)); // queued behind the first half, not written past it
    expect(events).toEqual(['blocked']); // told once, until all of it has gone in
    process.kill(reader.term.pid, 'SIGCONT');
    await waitFor(() => events.includes('drained'), 'the paste to go in');
    const received = await reader.received();
    expect(received.length).toBe(paste.length);
    expect(received.equals(paste)).toBe(true);
    input.close();
  });

  it('writes nothing once closed', async () => {
    const reader = await rawReader(2);
    const closed = createPtyInput(
      reader.term,
      () => {},
      () => {},
    );
    closed.close();
    closed.write(Buffer.from('x'));
    const open = createPtyInput(
      reader.term,
      () => {},
      () => {},
    );
    open.write(Buffer.from('yz'));
    expect((await reader.received()).toString()).toBe('yz');
    open.close();
  });
});
