/** The `diagnostics` job kind: the agent's own ops on this machine, their params checked, their errors from the catalogue; a slow op ends timed_out. */
import { hostname } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../../agent/config';
import type { JobContext } from '../../../agent/jobs/outcome';
import { runWork } from '../../../agent/jobs/run-work';
import { silentLogger } from '../../../shared/log';
import { tempDir } from '../../helpers/temp';

const logDir = tempDir('tether-jobs-logs-');
writeFileSync(join(logDir, 'app.log'), 'one\ntwo\nthree\n');
const config = loadAgentConfig({ server: 'http://127.0.0.1:9', deviceId: 'dev-diag', token: 'tok', logDirs: logDir, stateDir: tempDir() }, {});
const ctx: JobContext = { config, log: silentLogger, signal: new AbortController().signal, blobUrl: () => 'http://127.0.0.1:9/' };

describe('diagnostics jobs', () => {
  it('answers the op result as JSON', async () => {
    const info = await runWork({ kind: 'diagnostics', op: 'system.info' }, ctx);
    expect(info).toMatchObject({ status: 'succeeded', result: { hostname: hostname() } });
    expect(JSON.parse(JSON.stringify(info.result))).toEqual(info.result);
    const tail = await runWork({ kind: 'diagnostics', op: 'log.tail', params: { path: join(logDir, 'app.log'), lines: 2 } }, ctx);
    expect(tail).toMatchObject({ status: 'succeeded', result: { lines: ['two', 'three'] } });
  });

  it('fails with the catalogue code of the op error: bad params, a path outside the log dirs', async () => {
    expect(await runWork({ kind: 'diagnostics', op: 'process.list', params: { limit: 0 } }, ctx)).toMatchObject({
      status: 'failed',
      error: { code: 'bad_params', message: expect.stringContaining('params.limit') },
    });
    expect(await runWork({ kind: 'diagnostics', op: 'log.tail', params: { path: join(logDir, '../../etc/passwd') } }, ctx)).toMatchObject({
      status: 'failed',
      error: { code: 'path_outside_root' },
    });
  });

  it('ends timed_out when the op takes longer than the op timeout', async () => {
    // A 1 ms bound: process.list reads /proc for longer than that.
    const outcome = await runWork({ kind: 'diagnostics', op: 'process.list', params: { limit: 10_000 } }, ctx, 1);
    expect(outcome).toMatchObject({ status: 'timed_out', error: { code: 'timeout' } });
  });
});
