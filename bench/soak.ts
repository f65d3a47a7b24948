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
import { createHash, randomBytes } from 'node:crypto';
import { cpus, totalmem } from 'node:os';
import { writeFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import * as tar from 'tar-stream';
import { WebSocket } from 'ws';
import { helper, type Helper } from './helpers';
import { call, memoryDir, percentile, processStats, round, startServer, tempDir, type ServerProcess } from './lib';

const MiB = 1024 * 1024;
const quick = process.argv.includes('--quick');
const out = process.argv.find((a) => a.startsWith('--out='))?.slice(6) ?? resolve(__dirname, '..', 'bench', 'soak-results.json');
const plan = quick
  ? { shells: 10, transfers: 2, seconds: 5, fileBytes: 4 * MiB, agentsPerHelper: 50 }
  : { shells: 200, transfers: 10, seconds: 60, fileBytes: 64 * MiB, agentsPerHelper: 50 };
const USERS = 10;
const ECHO_EVERY_MS = 100;
/** Past the first quarter the server's memory must stay flat: this much growth at most. */
const RSS_GROWTH_LIMIT_MIB = 64;

interface Tally {
  errors: string[];
  echoes: number;
  echoMicros: number[];
  uploads: number;
  downloads: number;
  bytesMoved: number;
  sessionsChecked: number;
  countersWrong: number;
}
const tally: Tally = { errors: [], echoes: 0, echoMicros: [], uploads: 0, downloads: 0, bytesMoved: 0, sessionsChecked: 0, countersWrong: 0 };
const fail = (what: string) => {
  if (tally.errors.length < 50) tally.errors.push(what);
  else tally.errors.length++;
};

/** A session's stream with payload byte counts both ways (what the broker must have counted). */
class Client {
  readonly ws: WebSocket;
  sent = 0;
  received = 0;
  text = '';
  readonly closed: Promise<{ code: number; reason: string }>;
  onBinary?: (data: Buffer) => void;
  onJson?: (msg: any) => void;

  constructor(url: string) {
    this.ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 16 * MiB });
    this.closed = new Promise((r) => this.ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
    this.ws.on('error', () => {});
    this.ws.on('message', (data: Buffer, isBinary) => {
      this.received += data.length;
      if (isBinary) this.onBinary?.(data);
      else this.onJson?.(JSON.parse(data.toString()));
    });
  }

  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('close', (code) => reject(new Error(`closed ${code} before opening`)));
    });
  }

  send(data: Buffer | object): Promise<void> {
    const payload = Buffer.isBuffer(data) ? data : Buffer.from(JSON.stringify(data));
    this.sent += payload.length;
    return new Promise((resolve, reject) => this.ws.send(payload, { binary: Buffer.isBuffer(data) }, (err) => (err ? reject(err) : resolve())));
  }
}

async function openSession(server: ServerProcess, token: string, deviceId: string, protocol: string) {
  const r = await call(`${server.url}/v1/remote-access/sessions`, 'POST', token, { device_id: deviceId, protocol, ttl_seconds: 3600 });
  if (r.status !== 201) throw new Error(`open ${protocol} on ${deviceId}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data as { session_id: string; websocket_url: string };
}

/** Closes the session and checks its record: closed, counters equal to what the client counted. */
async function closeAndCheck(server: ServerProcess, token: string, sessionId: string, client: Client, what: string) {
  const r = await call(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'DELETE', token);
  if (r.status !== 200) return fail(`${what}: close answered ${r.status}`);
  const closed = await client.closed;
  if (closed.code !== 4000) fail(`${what}: stream closed ${closed.code} ${closed.reason}, expected 4000`);
  const s = (await call(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'GET', token)).body.data;
  tally.sessionsChecked++;
  if (s.status !== 'closed' || s.bytes_to_device !== client.sent || s.bytes_from_device !== client.received) {
    tally.countersWrong++;
    fail(`${what}: record ${s.status} ${s.bytes_to_device}/${s.bytes_from_device}, client counted ${client.sent}/${client.received}`);
  }
}

interface ReadyShell {
  deviceId: string;
  sessionId: string;
  client: Client;
  token: string;
  awaitText(needle: string, timeoutMs: number, times?: number): Promise<void>;
}

/** Opens a shell session and runs `exec cat` in it; resolves once a line comes back through cat. */
async function prepareShell(server: ServerProcess, token: string, deviceId: string): Promise<ReadyShell> {
  const what = `shell on ${deviceId}`;
  const session = await openSession(server, token, deviceId, 'shell');
  const client = new Client(session.websocket_url);
  client.onBinary = (d) => {
    client.text += d.toString('latin1');
    if (client.text.length > 64 * 1024) client.text = client.text.slice(-4096);
  };
  /** Waits until `needle` was seen `times` times (a typed line: the terminal's echo, then cat's). */
  const awaitText = async (needle: string, timeoutMs: number, times = 1) => {
    const deadline = performance.now() + timeoutMs;
    while (client.text.split(needle).length - 1 < times) {
      if (performance.now() > deadline) {
        throw new Error(`${what}: no echo of ${JSON.stringify(needle)} within ${timeoutMs} ms; got ${JSON.stringify(client.text.slice(-160))}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  await client.opened();
  await client.send(Buffer.from('exec cat\n'));
  await awaitText('exec cat', 60_000);
  // A line typed before cat runs comes back once only (while the shell still held the terminal,
  // nothing echoed it): wait for a line seen twice, the terminal's echo and cat's, typing a new
  // one each time the last came back once, so the shell is known to be cat.
  const deadline = performance.now() + 60_000;
  for (let attempt = 0; ; attempt++) {
    const line = `${deviceId}-ready-${attempt}`;
    await client.send(Buffer.from(`${line}\n`));
    try {
      await awaitText(`${line}\r\n`, 2_000, 2);
      break;
    } catch (err) {
      if (performance.now() > deadline) throw err;
    }
  }
  return { deviceId, sessionId: session.session_id, client, token, awaitText };
}

/** A numbered line every 100 ms until `until`, each awaited back; then the session is checked. */
async function echoUntil(server: ServerProcess, shell: ReadyShell, until: number): Promise<void> {
  try {
    for (let n = 0; Date.now() < until; n++) {
      const line = `${shell.deviceId}-echo-${n}`;
      const t0 = performance.now();
      await shell.client.send(Buffer.from(`${line}\n`));
      await shell.awaitText(`${line}\r\n`, 10_000, 2);
      tally.echoMicros.push((performance.now() - t0) * 1000);
      tally.echoes++;
      await new Promise((r) => setTimeout(r, ECHO_EVERY_MS));
    }
  } catch (err) {
    fail((err as Error).message);
  }
  await closeAndCheck(server, shell.token, shell.sessionId, shell.client, `shell on ${shell.deviceId}`);
}

/** Runs `fn` over `items`, at most `limit` at a time. */
async function pooled<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<PromiseSettledResult<R>[]> {
  const results: PromiseSettledResult<R>[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!, i).then(
          (value) => ({ status: 'fulfilled', value }) as const,
          (reason: unknown) => ({ status: 'rejected', reason }) as const,
        );
      }
    }),
  );
  return results;
}

/** One file-transfer session: upload a file, download it, compare digests, until the time is up. */
async function transferWorker(server: ServerProcess, token: string, deviceId: string, until: number): Promise<void> {
  const what = `transfer on ${deviceId}`;
  const session = await openSession(server, token, deviceId, 'file-transfer');
  const client = new Client(session.websocket_url);
  let waiting: { id: number; resolve: (m: any) => void; match: (m: any) => boolean } | undefined;
  client.onJson = (m) => {
    if (waiting && m.id === waiting.id && waiting.match(m)) {
      const w = waiting;
      waiting = undefined;
      w.resolve(m);
    }
  };
  const reply = (id: number, match: (m: any) => boolean = (m) => 'ok' in m) =>
    new Promise<any>((resolve) => (waiting = { id, resolve, match }));
  await client.opened();
  const name = `soak-${deviceId}.bin`;
  let id = 0;
  try {
    for (let round = 0; Date.now() < until; round++) {
      // upload: a tar of one file, generated and hashed as it goes
      const up = ++id;
      let answer = reply(up);
      await client.send({ id: up, op: 'upload', params: { path: '/' } });
      if (!(await answer).ok) throw new Error(`${what}: upload refused`);
      const sent = createHash('sha256');
      const pack = tar.pack();
      const packed = (async () => {
        for await (const chunk of pack as AsyncIterable<Buffer>) {
          await client.send(chunk);
        }
      })();
      const entry = pack.entry({ name, size: plan.fileBytes, mode: 0o644 });
      const block = randomBytes(MiB);
      for (let done = 0; done < plan.fileBytes; done += MiB) {
        block.writeUInt32BE(round, 0);
        block.writeUInt32BE(done / MiB, 4);
        sent.update(block);
        if (!entry.write(Buffer.from(block))) await new Promise<void>((r) => entry.once('drain', () => r()));
      }
      (entry as unknown as NodeJS.WritableStream).end();
      pack.finalize();
      await packed;
      answer = reply(up, (m) => 'ok' in m && m.result?.files !== undefined);
      await client.send({ id: up, op: 'end' });
      const committed = await answer;
      if (!committed.ok || committed.result.bytes !== plan.fileBytes) throw new Error(`${what}: upload answered ${JSON.stringify(committed)}`);
      tally.uploads++;
      tally.bytesMoved += plan.fileBytes;

      // download it back and compare
      const down = ++id;
      const received = createHash('sha256');
      const extract = tar.extract();
      let got = 0;
      extract.on('entry', (_h, stream, next) => {
        stream.on('data', (c) => {
          got += (c as Buffer).length;
          received.update(c as Buffer);
        });
        stream.on('end', () => next());
      });
      const extracted = new Promise<void>((r) => extract.on('finish', () => r()));
      client.onBinary = (d) => {
        if (!extract.write(d)) {
          client.ws.pause();
          extract.once('drain', () => client.ws.resume());
        }
      };
      const started = reply(down);
      const finished = new Promise<any>((resolve) => {
        const previous = client.onJson!;
        client.onJson = (m) => {
          if (m.id === down && m.done) {
            client.onJson = previous;
            resolve(m);
          } else previous(m);
        };
      });
      await client.send({ id: down, op: 'download', params: { path: name } });
      if (!(await started).ok) throw new Error(`${what}: download refused`);
      await finished;
      (extract as unknown as NodeJS.WritableStream).end();
      await extracted;
      client.onBinary = undefined;
      if (got !== plan.fileBytes || received.digest('hex') !== sent.digest('hex')) throw new Error(`${what}: downloaded bytes differ`);
      tally.downloads++;
      tally.bytesMoved += plan.fileBytes;
    }
  } catch (err) {
    fail((err as Error).message);
  }
  await closeAndCheck(server, token, session.session_id, client, what);
}

async function main(): Promise<void> {
  const server = await startServer();
  const root = memoryDir('tether-soak-root-');
  const stateDir = tempDir('tether-soak-state-');
  const helpers: Helper[] = [];
  const rss = () => processStats(server.pid).rss / MiB;
  try {
    const devices: Array<{ id: string; token: string }> = [];
    for (let i = 0; i < plan.shells; i++) {
      const r = await call(`${server.url}/v1/devices`, 'POST', server.token, { device_id: `soak-${i}` });
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
      tokens.push((await call(`${server.url}/v1/tokens`, 'POST', server.token, { username: `soak-${u}` })).body.data.token);
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
      ...shells.map((shell) => echoUntil(server, shell, until)),
      // file-transfer needs an administrator
      ...devices.slice(0, plan.transfers).map((d) => transferWorker(server, server.token, d.id, until)),
    ];
    const outcomes = await Promise.allSettled(work);
    for (const o of outcomes) if (o.status === 'rejected') fail(String(o.reason?.message ?? o.reason));
    const rssLoaded = rss();
    clearInterval(sampler);
    for (const t of quarterTimers) clearTimeout(t);
    quarters.push(round(rssLoaded, 1));
    const elapsed = (Date.now() - started) / 1000;
    const open = (await call(`${server.url}/v1/remote-access/sessions?status=open&per_page=1`, 'GET', server.token)).body.meta.total;
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
      ['server RSS: idle | each quarter of the load | after close', `${figures.server_rss_mib.idle} | ${quarters.join(' → ')} | ${figures.server_rss_mib.after_close} MiB (peak ${figures.server_rss_mib.peak})`],
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
