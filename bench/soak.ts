/**
 * @module `npm run soak`: a real server and real agents under sustained mixed load. 200 shell
 * sessions each echo a line through `cat` every 100 ms while 10 file-transfer sessions upload and
 * download files and check every byte, for 60 s. Then every session is closed and checked: zero
 * errors, each session's byte counters equal to what its client sent and received, and the
 * server's memory back where it was. Prints a table, writes bench/soak-results.json, exits 1 on
 * any error. `--quick` (10 shells, 2 transfers, 5 s) is what `npm test` runs.
 *
 * Agents are the real agent code (`swarm.ts real-agents`, 50 per helper process), so shells are
 * real login shells in real PTYs. Shell sessions are opened by ten platform engineers, so no user
 * meets the rate limit of 30 opens per minute; transfers by the administrator.
 */
import { cpus, totalmem } from 'node:os';
import { writeFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { helper, type Helper } from './helpers';
import type { DeviceCreated } from '../shared/api/devices';
import type { IssuedToken } from '../shared/api/identity';
import type { Session } from '../shared/api/sessions';
import { call, memoryDir, percentile, pooled, processStats, round, startServer, tempDir, type Data, type Page } from './lib';
import { Tally } from './soak-client';
import { echoUntil, prepareShell, type ReadyShell } from './soak-shells';
import { transferWorker } from './soak-transfers';

const MiB = 1024 * 1024;
const quick = process.argv.includes('--quick');
const out = process.argv.find((a) => a.startsWith('--out='))?.slice(6) ?? resolve(__dirname, '..', 'bench', 'soak-results.json');
const plan = quick
  ? { shells: 10, transfers: 2, seconds: 5, fileBytes: 4 * MiB, agentsPerHelper: 50 }
  : { shells: 200, transfers: 10, seconds: 60, fileBytes: 64 * MiB, agentsPerHelper: 50 };
const USERS = 10;
/** Past the first quarter the server's memory must stay flat: this much growth at most. */
const RSS_GROWTH_LIMIT_MIB = 64;

async function main(): Promise<void> {
  const tally = new Tally();
  const fail = (what: string) => tally.fail(what);
  const server = await startServer();
  const root = memoryDir('tether-soak-root-');
  const stateDir = tempDir('tether-soak-state-');
  const helpers: Helper[] = [];
  const rss = () => processStats(server.pid).rss / MiB;
  try {
    const devices: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < plan.shells; i++) {
      const r = await call<Data<DeviceCreated>>(`${server.url}/v1/devices`, 'POST', server.token, { device_id: `soak-${i}` });
      devices.push({ id: `soak-${i}`, token: r.body.data.agent_token });
    }
    for (let i = 0; i < devices.length; i += plan.agentsPerHelper) {
      const file = join(stateDir, `devices-${i}.json`);
      writeFileSync(file, JSON.stringify(devices.slice(i, i + plan.agentsPerHelper)));
      helpers.push(helper(['real-agents', server.url, file, stateDir, root]));
    }
    for (const h of helpers) await h.next(); // all connected
    const tokens: string[] = [];
    for (let u = 0; u < USERS; u++) {
      await call(`${server.url}/v1/users`, 'POST', server.token, { username: `soak-${u}`, role: 'platform-engineer' });
      tokens.push((await call<Data<IssuedToken>>(`${server.url}/v1/tokens`, 'POST', server.token, { username: `soak-${u}` })).body.data.token);
    }
    const rssIdle = rss();
    // Ramp up: login shells take a fifth of a second of CPU each to start on this kind of
    // machine, so they are opened a few at a time; the clock starts once all of them run cat.
    const rampStarted = Date.now();
    const prepared = await pooled(devices, 8, (d, i) => prepareShell(server, tokens[i % USERS]!, d.id));
    const shells: ReadyShell[] = [];
    for (const p of prepared) {
      if (p.status === 'fulfilled') shells.push(p.value);
      else fail(String((p.reason as Error)?.message ?? p.reason));
    }
    const rampSeconds = (Date.now() - rampStarted) / 1000;
    let rssPeak = rss();
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rss())), 250);
    // RSS at each quarter of the load: a leak grows from quarter to quarter, a plateau does not.
    const quarters: number[] = [];
    const quarterTimers = [1, 2, 3].map((q) => setTimeout(() => quarters.push(round(rss(), 1)), (plan.seconds * 1000 * q) / 4));
    const started = Date.now();
    const until = started + plan.seconds * 1000;
    const work = [
      ...shells.map((shell) => echoUntil(server, shell, until, tally)),
      // file-transfer needs an administrator
      ...devices.slice(0, plan.transfers).map((d) => transferWorker(server, server.token, d.id, until, plan.fileBytes, tally)),
    ];
    const outcomes = await Promise.allSettled(work);
    for (const o of outcomes) if (o.status === 'rejected') fail(String(o.reason?.message ?? o.reason));
    const rssLoaded = rss();
    clearInterval(sampler);
    for (const t of quarterTimers) clearTimeout(t);
    quarters.push(round(rssLoaded, 1));
    const elapsed = (Date.now() - started) / 1000;
    const open = (await call<Page<Session>>(`${server.url}/v1/remote-access/sessions?status=open&per_page=1`, 'GET', server.token)).body.meta.total;
    if (open !== 0) fail(`${open} sessions still open after the run`);
    const rssAfter = rss();
    const sorted = tally.echoMicros.sort((a, b) => a - b);
    const figures = {
      at: new Date().toISOString(),
      quick,
      machine: { cpus: cpus().length, memory_bytes: totalmem(), node: process.version },
      plan,
      ramp_up_seconds: round(rampSeconds, 1),
      seconds: round(elapsed, 1),
      errors: tally.errors.length,
      error_samples: tally.errors.slice(0, 10),
      shell_echoes: tally.echoes,
      echo_p50_ms: round(percentile(sorted, 50) / 1000, 2),
      echo_p99_ms: round(percentile(sorted, 99) / 1000, 2),
      uploads: tally.uploads,
      downloads: tally.downloads,
      transfer_mib: round(tally.bytesMoved / MiB, 0),
      sessions_checked: tally.sessionsChecked,
      counters_wrong: tally.countersWrong,
      server_rss_mib: { idle: round(rssIdle, 1), quarters, peak: round(rssPeak, 1), after_close: round(rssAfter, 1) },
      /** Growth from the first quarter of the load to after every session closed. */
      server_rss_growth_mib: round(rssAfter - (quarters[0] ?? rssIdle), 1),
    };
    writeFileSync(out, `${JSON.stringify(figures, null, 2)}\n`);
    const rows: Array<[string, string]> = [
      ['ramp-up (shells opened 8 at a time) / load', `${figures.ramp_up_seconds} s / ${figures.seconds} s`],
      ['shell sessions / transfer sessions', `${plan.shells} / ${plan.transfers}`],
      ['shell echoes (p50 / p99)', `${figures.shell_echoes} (${figures.echo_p50_ms} / ${figures.echo_p99_ms} ms)`],
      ['uploads / downloads, checked byte for byte', `${figures.uploads} / ${figures.downloads} (${figures.transfer_mib} MiB)`],
      ['sessions checked / counters wrong', `${figures.sessions_checked} / ${figures.counters_wrong}`],
      ['errors', String(figures.errors)],
      [
        'server RSS: idle | each quarter of the load | after close',
        `${figures.server_rss_mib.idle} | ${quarters.join(' → ')} | ${figures.server_rss_mib.after_close} MiB (peak ${figures.server_rss_mib.peak})`,
      ],
      ['server RSS growth, first quarter → after close', `${figures.server_rss_growth_mib} MiB (limit ${RSS_GROWTH_LIMIT_MIB})`],
    ];
    const width = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
    for (const e of figures.error_samples) console.log(`error: ${e}`);
    const clean = figures.errors === 0 && figures.counters_wrong === 0 && figures.sessions_checked === plan.shells + plan.transfers;
    process.exitCode = clean && figures.server_rss_growth_mib <= RSS_GROWTH_LIMIT_MIB ? 0 : 1;
  } finally {
    await Promise.all(helpers.map((h) => h.stop()));
    await server.stop();
    rmSync(root, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
