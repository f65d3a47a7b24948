/**
 * `tether server`'s start-up mistakes as an operator meets them (docs/settings.md, server): a
 * misspelled variable stops it with the closest known name, another component's variables do
 * not, and a taken port stops it before it writes a data dir or a token.
 */
import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { client } from '../helpers/http';
import { startProcess, startServerProcess } from '../helpers/processes';
import { tempDir } from '../helpers/stack';

describe('tether server settings', () => {
  it('exits 2 on a misspelled variable, naming the one meant, and writes nothing', async () => {
    const dataDir = join(tempDir(), 'data');
    const proc = startProcess(['server'], { TETHER_LISTN: '127.0.0.1:0', TETHER_DATA_DIR: dataDir });
    // a server that ignored the typo would listen (on the default port): fail at once then
    const listening = proc.waitForLine(/^tether listening on /, 30_000).then(
      () => 'listening',
      () => 'timed out',
    );
    expect(await Promise.race([proc.exited, listening])).toEqual({ code: 2, signal: null });
    expect(proc.stderr.join('\n')).toContain('TETHER_LISTN: unknown setting; did you mean TETHER_LISTEN?');
    expect(existsSync(dataDir)).toBe(false);
  });

  it("starts with the agent's, the client's and the reserved variables in its environment", async () => {
    const { proc, url } = await startServerProcess(tempDir(), {
      TETHER_SERVER: 'http://127.0.0.1:1',
      TETHER_TOKEN: 'tth_not-this-one',
      TETHER_DEVICE_ID: 'laptop',
      TETHER_LOG_DIRS: '/var/log',
      TETHER_RECORD_SHELL: '1',
    });
    expect((await client(url).get('/healthz')).status).toBe(200);
    await proc.stop();
  });

  it('on a taken port exits 1 before writing anything, saying how to pick another port', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = taken.address() as AddressInfo;
      const dataDir = join(tempDir(), 'data');
      const proc = startProcess(['server'], { TETHER_LISTEN: `127.0.0.1:${port}`, TETHER_DATA_DIR: dataDir });
      expect(await proc.exited).toEqual({ code: 1, signal: null });
      expect(proc.stderr).toEqual([
        `tether: 127.0.0.1:${port} is in use by another process; set TETHER_LISTEN (or listen: in the --config file) to another host:port (port 0 picks a free one)`,
      ]);
      expect(proc.stdout).toEqual([]);
      expect(existsSync(dataDir)).toBe(false);
      expect(existsSync(join(dataDir, 'admin.token'))).toBe(false);
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });
});
