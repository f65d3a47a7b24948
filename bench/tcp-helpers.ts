/**
 * @module The TCP ends of the port-forward benchmark, run as helper processes of `swarm.ts` so
 * that the load does not share a measured process's CPU. Services on the device side:
 * `tcp-sink` (counts what each connection sends, answers the count once it half-closes),
 * `tcp-source` (each connection asks for N bytes with an 8-byte request, gets them, then a FIN)
 * and `tcp-echo`. Clients: `tcp-up PORT BYTES CONNS`, `tcp-down PORT BYTES CONNS` (BYTES split
 * over CONNS connections at once; reports the seconds from the first connect to the last byte)
 * and `tcp-pingpong PORT SAMPLES WARMUP_MS` (1-byte round trips, one at a time). And the honest
 * reference of a relay written in Node (issue 35): `tcp-relay PORT...` listens on one port per
 * target and pipes each connection to it, both ways, with `socket.pipe` and nothing else.
 */
import { connect, createServer, type Socket } from 'node:net';

const CHUNK = 256 * 1024;

function report(msg: object): void {
  process.stdout.write(`${JSON.stringify(msg)}\n`);
}

function listen(onSocket: (s: Socket) => void): void {
  const server = createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    s.setNoDelay(true);
    onSocket(s);
  });
  server.listen(0, '127.0.0.1', () => report({ port: (server.address() as { port: number }).port }));
}

/** Writes `bytes` to `s` as fast as it takes them, then calls `done`. */
function pump(s: Socket, bytes: number, done: () => void): void {
  const chunk = Buffer.alloc(CHUNK, 7);
  let sent = 0;
  const more = (): void => {
    while (sent < bytes) {
      const n = Math.min(CHUNK, bytes - sent);
      sent += n;
      if (!s.write(n === CHUNK ? chunk : chunk.subarray(0, n))) return void s.once('drain', more);
    }
    done();
  };
  more();
}

function dial(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => resolve(s));
    s.setNoDelay(true);
    s.once('error', reject);
  });
}

/** Splits `bytes` over `conns` connections: their shares, the last one taking the rest. */
const shares = (bytes: number, conns: number) =>
  Array.from({ length: conns }, (_, i) => (i < conns - 1 ? Math.floor(bytes / conns) : bytes - Math.floor(bytes / conns) * (conns - 1)));

async function up(port: number, bytes: number, conns: number): Promise<void> {
  const t0 = performance.now();
  await Promise.all(
    shares(bytes, conns).map(async (share) => {
      const s = await dial(port);
      const answer = new Promise<number>((resolve) => {
        const parts: Buffer[] = [];
        s.on('data', (d: Buffer) => parts.push(d));
        s.on('end', () => resolve(Number(Buffer.concat(parts).readBigUInt64BE(0))));
      });
      pump(s, share, () => s.end());
      const counted = await answer;
      if (counted !== share) throw new Error(`the sink counted ${counted} of ${share} bytes`);
      s.destroy();
    }),
  );
  report({ seconds: (performance.now() - t0) / 1000 });
}

async function down(port: number, bytes: number, conns: number): Promise<void> {
  const t0 = performance.now();
  await Promise.all(
    shares(bytes, conns).map(async (share) => {
      const s = await dial(port);
      let got = 0;
      const ended = new Promise<void>((resolve) => s.on('end', resolve));
      s.on('data', (d: Buffer) => (got += d.length));
      const request = Buffer.alloc(8);
      request.writeBigUInt64BE(BigInt(share));
      s.write(request);
      await ended;
      if (got !== share) throw new Error(`received ${got} of ${share} bytes`);
      s.destroy();
    }),
  );
  report({ seconds: (performance.now() - t0) / 1000 });
}

async function pingpong(port: number, samples: number, warmupMs: number): Promise<void> {
  const s = await dial(port);
  let waiting: (() => void) | undefined;
  s.on('data', () => waiting?.());
  const one = async () => {
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      waiting = resolve;
      s.write('x');
    });
    return performance.now() - t0;
  };
  const started = performance.now();
  while (performance.now() - started < warmupMs) await one();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) times.push(await one());
  times.sort((a, b) => a - b);
  s.destroy();
  report({ times });
}

/**
 * A relay process with nothing but `pipe` (its backpressure included), one listening port per
 * target; reports `{ports}` once all listen. Half-closes pass through: `pipe` ends the other side.
 */
function relay(targets: number[]): void {
  const servers = targets.map((target) =>
    createServer({ allowHalfOpen: true }, (a) => {
      const b = connect({ port: target, host: '127.0.0.1', allowHalfOpen: true });
      const both = () => {
        a.destroy();
        b.destroy();
      };
      a.on('error', both);
      b.on('error', both);
      a.setNoDelay(true);
      b.setNoDelay(true);
      a.pipe(b);
      b.pipe(a);
    }),
  );
  let listening = 0;
  for (const s of servers) {
    s.listen(0, '127.0.0.1', () => {
      if (++listening === servers.length) report({ ports: servers.map((x) => (x.address() as { port: number }).port) });
    });
  }
}

/** Runs the TCP helper `mode` with `args`; false if `mode` is not one of them. */
export function runTcpHelper(mode: string, args: string[]): boolean {
  const [a, b, c] = args.map(Number);
  const fail = (err: Error) => {
    process.stderr.write(`${mode}: ${err.message}\n`);
    process.exit(1);
  };
  switch (mode) {
    case 'tcp-sink':
      listen((s) => {
        let n = 0;
        s.on('data', (d: Buffer) => (n += d.length));
        s.on('end', () => {
          const count = Buffer.alloc(8);
          count.writeBigUInt64BE(BigInt(n));
          s.end(count);
        });
      });
      return true;
    case 'tcp-source':
      listen((s) => {
        let request = Buffer.alloc(0);
        s.on('data', function onRequest(d: Buffer) {
          request = Buffer.concat([request, d]);
          if (request.length < 8) return;
          s.off('data', onRequest);
          pump(s, Number(request.readBigUInt64BE(0)), () => s.end());
        });
      });
      return true;
    case 'tcp-echo':
      listen((s) => s.pipe(s));
      return true;
    case 'tcp-up':
      up(a!, b!, c!).catch(fail);
      return true;
    case 'tcp-down':
      down(a!, b!, c!).catch(fail);
      return true;
    case 'tcp-pingpong':
      pingpong(a!, b!, c!).catch(fail);
      return true;
    case 'tcp-relay':
      relay(args.map(Number));
      return true;
    default:
      return false;
  }
}
