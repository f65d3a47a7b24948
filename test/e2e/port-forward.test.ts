/**
 * Port forwarding (issue 15, CONTRACT 9) end to end: a real server, real agent processes and the
 * real `tether forward` command, with TCP services on the device side (this host's loopback):
 * an echo server, a bulk source, half-closing peers; many connections at once, one stalled while
 * another moves 100 MiB; refused and forbidden targets; the connection cap; session close and TTL
 * tearing everything down; and the session's byte counters against what a raw client sent.
 */
import { createHash } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import * as pty from 'node-pty';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FORWARD_WINDOW, RECORD_HEADER_BYTES } from '../../shared/protocol/port-forward/protocol';
import { startProcess, TETHER_BIN } from '../helpers/processes';
import { startStack, tempDir, type Stack } from '../helpers/stack';
import { connectStream } from '../helpers/stream';
import { waitFor } from '../helpers/wait';

const MiB = 1024 * 1024;
let offset = 0; // the server's clock runs `offset` ms ahead of the real one (TTL test)
let stack: Stack;
let engineer: string;

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

beforeAll(async () => {
  stack = await startStack({ now: () => Date.now() + offset });
  engineer = await stack.userToken('pf-eng', 'platform-engineer');
  await stack.onlineDevice('pf-dev');
});
afterAll(() => stack.stop());

/** A TCP service on the device side (this host's loopback), closed after the test. */
async function service(onSocket: (s: Socket) => void): Promise<{ port: number; server: Server; sockets: Socket[] }> {
  const sockets: Socket[] = [];
  const server = createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    sockets.push(s);
    onSocket(s);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => {
    for (const s of sockets) s.destroy();
    server.close();
  });
  return { port: (server.address() as { port: number }).port, server, sockets };
}

const echo = () => service((s) => s.pipe(s));

/** `tether forward DEVICE SPECS…` as the platform engineer; resolves once every forward listens. */
async function forward(device: string, specs: string[], extra: string[] = []) {
  const proc = startProcess(['forward', device, ...specs, ...extra], {
    TETHER_SERVER: stack.url,
    TETHER_TOKEN: engineer,
    XDG_CONFIG_HOME: tempDir('tether-pf-config-'),
  });
  closers.push(() => proc.kill('SIGKILL'));
  await waitFor(() => proc.stdout.filter((l) => l.startsWith('forwarding ')).length === specs.length || proc.child.exitCode !== null, 'the forwards to listen');
  const ports = proc.stdout.filter((l) => l.startsWith('forwarding ')).map((l) => Number(/^forwarding 127\.0\.0\.1:(\d+) /.exec(l)![1]));
  if (ports.length !== specs.length) throw new Error(`tether forward did not start: ${proc.stderr.join('\n')}`);
  return { proc, ports };
}

/** A client connection to a forwarded port, with everything it received. */
async function dial(port: number) {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  const chunks: Buffer[] = [];
  let ended = false;
  let error: NodeJS.ErrnoException | undefined;
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('end', () => (ended = true));
  socket.on('error', (err) => (error = err));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  closers.push(() => socket.destroy());
  return {
    socket,
    received: () => Buffer.concat(chunks),
    get ended() {
      return ended;
    },
    get error() {
      return error;
    },
    closed,
  };
}

const sessionsOf = async (device: string) =>
  (await stack.admin.get(`/v1/remote-access/sessions?device_id=${device}&protocol=port-forward&status=open`)).body.data as Array<{
    session_id: string;
    targets: string[];
  }>;

describe('the API', () => {
  it('opens a port-forward session for a platform engineer, with its targets in the record, the list and the audit', async () => {
    const pe = stack.as(engineer);
    const opened = await pe.post('/v1/remote-access/sessions', {
      device_id: 'pf-dev',
      protocol: 'port-forward',
      targets: ['127.0.0.1:5432', 'LOCALHOST:80', 'localhost:80', '[0:0::1]:22'],
    });
    expect(opened.status).toBe(201);
    // canonical, each once
    expect(opened.body.data).toMatchObject({ protocol: 'port-forward', targets: ['127.0.0.1:5432', 'localhost:80', '[::1]:22'] });
    const id = opened.body.data.session_id;
    expect((await pe.get(`/v1/remote-access/sessions/${id}`)).body.data.targets).toEqual(['127.0.0.1:5432', 'localhost:80', '[::1]:22']);
    expect((await sessionsOf('pf-dev')).map((s) => s.targets)).toEqual([['127.0.0.1:5432', 'localhost:80', '[::1]:22']]);
    // one open session per protocol per device
    const again = await pe.post('/v1/remote-access/sessions', { device_id: 'pf-dev', protocol: 'port-forward', targets: ['127.0.0.1:1'] });
    expect(again.status).toBe(409);
    expect((await pe.del(`/v1/remote-access/sessions/${id}`)).status).toBe(200);
    const audit = (await stack.admin.get(`/v1/audit/remote-access?session_id=${id}`)).body.data;
    expect(audit.map((e: { event: string; targets: string[] }) => [e.event, e.targets])).toEqual([
      ['session.closed', ['127.0.0.1:5432', 'localhost:80', '[::1]:22']],
      ['session.opened', ['127.0.0.1:5432', 'localhost:80', '[::1]:22']],
    ]);
    // other protocols' records and events have no targets
    const shell = (await pe.post('/v1/remote-access/sessions', { device_id: 'pf-dev', protocol: 'shell' })).body.data;
    expect(shell).not.toHaveProperty('targets');
    await pe.del(`/v1/remote-access/sessions/${shell.session_id}`);
  });

  it('refuses a developer (403), bad targets (400) and targets the agent does not allow (422 target_not_allowed)', async () => {
    const dev = stack.as(await stack.userToken('pf-devuser', 'developer'));
    const developer = await dev.post('/v1/remote-access/sessions', { device_id: 'pf-dev', protocol: 'port-forward', targets: ['127.0.0.1:22'] });
    expect(developer.status).toBe(403);
    expect(developer.body.message).toContain('platform-engineer');

    const pe = stack.as(engineer);
    const bad = async (body: object) => {
      const res = await pe.post('/v1/remote-access/sessions', { device_id: 'pf-dev', ...body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      return res.body.details as Array<{ path: string; message: string }>;
    };
    expect(await bad({ protocol: 'port-forward' })).toEqual([{ path: 'targets', message: expect.stringContaining('is required') }]);
    expect(await bad({ protocol: 'port-forward', targets: [] })).toEqual([{ path: 'targets', message: expect.any(String) }]);
    expect(await bad({ protocol: 'shell', targets: ['127.0.0.1:22'] })).toEqual([{ path: 'targets', message: 'only a port-forward session has targets' }]);
    const nine = Array.from({ length: 9 }, (_, i) => `127.0.0.1:${i + 1}`);
    expect((await bad({ protocol: 'port-forward', targets: nine }))[0]!.path).toBe('targets');
    const shapes = await bad({ protocol: 'port-forward', targets: ['127.0.0.1', 'db:0', 'db:65536', 'a b:1', '::1:22', 'db:*'] });
    expect(shapes.map((d) => d.path)).toEqual(['targets[0]', 'targets[1]', 'targets[2]', 'targets[3]', 'targets[4]', 'targets[5]']);
    expect(shapes[4]!.message).toContain('brackets');

    const refused = await pe.post('/v1/remote-access/sessions', {
      device_id: 'pf-dev',
      protocol: 'port-forward',
      targets: ['127.0.0.1:22', '10.1.2.3:22', 'db.local:5432'],
    });
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({ error: 'target_not_allowed', status: 422 });
    expect(refused.body.message).toContain('10.1.2.3:22, db.local:5432');
    expect(refused.body.message).toContain('127.0.0.1:*, localhost:*, [::1]:*');
    expect(await sessionsOf('pf-dev')).toEqual([]);
  });

  it('shows and enforces the allow-list an agent announces; the device record shows it too', async () => {
    const { agent } = await stack.onlineDevice('pf-narrow', { TETHER_FORWARD_ALLOW: '127.0.0.1:5432, db.LOCAL:*' });
    expect((await stack.admin.get('/v1/devices/pf-narrow')).body.data.forward_allow).toEqual(['127.0.0.1:5432', 'db.local:*']);
    const pe = stack.as(engineer);
    const open = (targets: string[]) => pe.post('/v1/remote-access/sessions', { device_id: 'pf-narrow', protocol: 'port-forward', targets });
    expect((await open(['127.0.0.1:22'])).body.error).toBe('target_not_allowed');
    const ok = await open(['127.0.0.1:5432', 'db.local:6379']);
    expect(ok.status).toBe(201);
    await pe.del(`/v1/remote-access/sessions/${ok.body.data.session_id}`);
    await agent.stop();
  });

  it('an agent with a malformed allow-list does not start, and says why', async () => {
    const token = await stack.addDevice('pf-typo');
    const agent = stack.startAgent('pf-typo', token, { TETHER_FORWARD_ALLOW: '127.0.0.1:*,db.local' });
    expect((await agent.exited).code).toBe(2);
    expect(agent.stderr.join('\n')).toMatch(/forwardAllow: "db\.local" is not HOST:PORT/);
  });
});

describe('tether forward', () => {
  it('carries bytes both ways, prints one line per forward, and closes the session on SIGINT with exit 0', async () => {
    const svc = await echo();
    const { proc, ports } = await forward('pf-dev', [`0:127.0.0.1:${svc.port}`, `127.0.0.1:0:localhost:${svc.port}`]);
    expect(proc.stdout.filter((l) => l.startsWith('forwarding'))).toEqual([
      `forwarding 127.0.0.1:${ports[0]} -> pf-dev:127.0.0.1:${svc.port}`,
      `forwarding 127.0.0.1:${ports[1]} -> pf-dev:localhost:${svc.port}`,
    ]);
    const [session] = await sessionsOf('pf-dev');
    expect(session!.targets).toEqual([`127.0.0.1:${svc.port}`, `localhost:${svc.port}`]);
    for (const port of ports) {
      const c = await dial(port);
      const payload = Buffer.from(`hello through ${port}\n`.repeat(1000));
      c.socket.end(payload);
      await waitFor(() => c.ended, 'the echo to end');
      expect(c.received().equals(payload)).toBe(true);
    }
    proc.kill('SIGINT');
    expect((await proc.exited).code).toBe(0);
    const closed = (await stack.admin.get(`/v1/remote-access/sessions/${session!.session_id}`)).body.data;
    expect(closed).toMatchObject({ status: 'closed', close_reason: 'closed' });
  });

  it('on a terminal, logs each connection as it opens and closes; with --json, prints the session and where each forward listens', async () => {
    const svc = await echo();
    const term = pty.spawn(process.execPath, [TETHER_BIN, 'forward', 'pf-dev', `0:127.0.0.1:${svc.port}`], {
      env: { ...process.env, TETHER_SERVER: stack.url, TETHER_TOKEN: engineer, XDG_CONFIG_HOME: tempDir('tether-pf-config-') } as Record<string, string>,
    });
    let screen = '';
    term.onData((d) => (screen += d));
    const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
    try {
      const port = Number((await waitFor(() => /forwarding 127\.0\.0\.1:(\d+) -> /.exec(screen), 'the forwarding line'))[1]);
      const c = await dial(port);
      c.socket.end('hi');
      await waitFor(() => c.ended, 'the echo');
      await waitFor(() => /connection 1 to 127\.0\.0\.1:\d+ closed \(2 B sent, 2 B received\)/.test(screen), 'the close logged');
      expect(screen).toMatch(new RegExp(`connection 1 from 127\\.0\\.0\\.1:\\d+ to 127\\.0\\.0\\.1:${port} -> 127\\.0\\.0\\.1:${svc.port}`));
      term.kill('SIGINT');
      expect(await exited).toBe(0);
    } finally {
      term.kill('SIGKILL');
    }

    const proc = startProcess(['forward', 'pf-dev', '0:127.0.0.1:1', '--json'], {
      TETHER_SERVER: stack.url,
      TETHER_TOKEN: engineer,
      XDG_CONFIG_HOME: tempDir('tether-pf-config-'),
    });
    closers.push(() => proc.kill('SIGKILL'));
    await waitFor(() => proc.stdout.join('\n').trim().endsWith('}') && proc.stdout.join('\n'), 'the JSON');
    const printed = JSON.parse(proc.stdout.join('\n'));
    expect(printed).toMatchObject({
      protocol: 'port-forward',
      device_id: 'pf-dev',
      targets: ['127.0.0.1:1'],
      forwards: [{ listen: expect.stringMatching(/^127\.0\.0\.1:\d+$/), target: '127.0.0.1:1' }],
    });
    proc.kill('SIGTERM');
    expect((await proc.exited).code).toBe(0);
  });

  it('half-closes both ways: each FIN reaches the other side, and the other direction goes on', async () => {
    // The device's service answers only once the client has finished sending.
    const upFirst = await service((s) => {
      let n = 0;
      s.on('data', (d: Buffer) => (n += d.length));
      s.on('end', () => s.end(`got ${n} bytes`));
    });
    // The device's service says its piece and half-closes at once, then goes on reading.
    let heardAfterFin = '';
    const downFirst = await service((s) => {
      s.end('server done talking');
      s.on('data', (d: Buffer) => (heardAfterFin += d.toString()));
    });
    const { proc, ports } = await forward('pf-dev', [`0:127.0.0.1:${upFirst.port}`, `0:127.0.0.1:${downFirst.port}`]);

    const a = await dial(ports[0]!);
    a.socket.end(Buffer.alloc(300_000, 1));
    await waitFor(() => a.ended, 'the answer after our FIN');
    expect(a.received().toString()).toBe('got 300000 bytes');

    const b = await dial(ports[1]!);
    await waitFor(() => b.ended, "the device side's FIN");
    expect(b.received().toString()).toBe('server done talking');
    b.socket.end('client still talking after the FIN');
    await waitFor(() => heardAfterFin === 'client still talking after the FIN', 'the device side to hear us after its FIN');
    await b.closed;
    proc.kill('SIGTERM');
    expect((await proc.exited).code).toBe(0);
  });

  it('a stalled connection never holds up another: 100 MiB move beside one whose reader reads nothing', async () => {
    const block = Buffer.alloc(MiB);
    for (let i = 0; i < block.length; i++) block[i] = (i * 7 + 3) & 0xff;
    const total = 100;
    // Each connection gets `total` MiB from the device side, as fast as it will take them.
    const source = await service((s) => {
      let sent = 0;
      const pump = () => {
        while (sent < total) {
          sent++;
          if (!s.write(block)) return void s.once('drain', pump);
        }
        s.end();
      };
      pump();
    });
    const { proc, ports } = await forward('pf-dev', [`0:127.0.0.1:${source.port}`]);
    const stalled = await dial(ports[0]!);
    stalled.socket.pause(); // reads nothing
    await waitFor(() => source.sockets.length === 1, 'the stalled connection to reach the device');

    const moving = await dial(ports[0]!);
    const hash = createHash('sha256');
    let bytes = 0;
    moving.socket.on('data', (d: Buffer) => {
      hash.update(d);
      bytes += d.length;
    });
    await waitFor(() => moving.ended, '100 MiB beside the stalled connection', 60_000);
    expect(bytes).toBe(total * MiB);
    const expected = createHash('sha256');
    for (let i = 0; i < total; i++) expected.update(block);
    expect(hash.digest('hex')).toBe(expected.digest('hex'));

    // The stalled one is still alive and loses nothing once it reads.
    expect(stalled.ended).toBe(false);
    expect(stalled.error).toBeUndefined();
    const stalledHash = createHash('sha256');
    let stalledBytes = 0;
    stalled.socket.removeAllListeners('data');
    stalled.socket.on('data', (d: Buffer) => {
      stalledHash.update(d);
      stalledBytes += d.length;
    });
    stalled.socket.resume();
    await waitFor(() => stalled.ended, 'the stalled connection to finish once read', 60_000);
    expect(stalledBytes).toBe(total * MiB);
    const again = createHash('sha256');
    for (let i = 0; i < total; i++) again.update(block);
    expect(stalledHash.digest('hex')).toBe(again.digest('hex'));
    proc.kill('SIGTERM');
    await proc.exited;
  }, 120_000);

  it('a refused target resets the client with the reason shown; the session goes on', async () => {
    const closedPort = await service(() => {});
    const port = closedPort.port;
    closedPort.server.close(); // nothing listens there any more
    const svc = await echo();
    const { proc, ports } = await forward('pf-dev', [`0:127.0.0.1:${port}`, `0:127.0.0.1:${svc.port}`]);
    const c = await dial(ports[0]!);
    await c.closed;
    expect(c.error?.code).toBe('ECONNRESET');
    await proc.waitForLine(new RegExp(`connection 1 to 127\\.0\\.0\\.1:${port} .*refused.*connection refused`));
    // the other forward still works
    const ok = await dial(ports[1]!);
    ok.socket.end('still here');
    await waitFor(() => ok.ended, 'the echo');
    expect(ok.received().toString()).toBe('still here');
    proc.kill('SIGTERM');
    await proc.exited;
  });

  it('refuses a forward whose target the agent does not allow before listening for connections, and exits 1', async () => {
    const proc = startProcess(['forward', 'pf-dev', '0:10.9.8.7:22'], {
      TETHER_SERVER: stack.url,
      TETHER_TOKEN: engineer,
      XDG_CONFIG_HOME: tempDir('tether-pf-config-'),
    });
    expect((await proc.exited).code).toBe(1);
    expect(proc.stderr.join('\n')).toMatch(/^tether: device pf-dev does not forward to 10\.9\.8\.7:22: its agent allows/m);
    expect(await sessionsOf('pf-dev')).toEqual([]);
  });

  it('says what is wrong with a forward, exit 2, and with a taken local port, exit 1, before opening any session', async () => {
    const env = { TETHER_SERVER: stack.url, TETHER_TOKEN: engineer, XDG_CONFIG_HOME: tempDir('tether-pf-config-') };
    for (const [spec, message] of [
      ['8080', /a forward is \[BIND_ADDR:\]LOCAL_PORT:REMOTE_HOST:REMOTE_PORT/],
      ['99999:127.0.0.1:22', /"99999" is not a port \(0 to 65535\)/],
      ['8080:127.0.0.1:0', /"0" is not a port \(1 to 65535\)/],
      ['8080:::1:22', /brackets/],
    ] as const) {
      const proc = startProcess(['forward', 'pf-dev', spec], env);
      expect((await proc.exited).code, spec).toBe(2);
      expect(proc.stderr.join('\n')).toMatch(message);
    }
    const taken = await service(() => {});
    const proc = startProcess(['forward', 'pf-dev', `${taken.port}:127.0.0.1:22`], env);
    expect((await proc.exited).code).toBe(1);
    expect(proc.stderr.join('\n')).toContain(`cannot listen on 127.0.0.1:${taken.port} for ${taken.port}:127.0.0.1:22: the port is in use`);
    expect(await sessionsOf('pf-dev')).toEqual([]);
  });

  it('holds 64 connections at once and refuses the 65th with the reason; a freed slot is used again', async () => {
    const svc = await echo();
    const { proc, ports } = await forward('pf-dev', [`0:127.0.0.1:${svc.port}`]);
    const held: Array<Awaited<ReturnType<typeof dial>>> = [];
    for (let i = 0; i < 64; i++) {
      const c = await dial(ports[0]!);
      c.socket.write(`ping ${i}`);
      held.push(c);
    }
    await waitFor(() => held.every((c, i) => c.received().toString() === `ping ${i}`), '64 echoes');
    const over = await dial(ports[0]!);
    await over.closed;
    expect(over.error?.code).toBe('ECONNRESET');
    await proc.waitForLine(/connection 65 to .* refused by the device: limit \(this device holds at most 64 connections per session\)/);

    held[0]!.socket.end();
    await held[0]!.closed;
    await waitFor(() => svc.sockets.filter((s) => !s.destroyed).length === 63, 'the device side to let go of one');
    const next = await dial(ports[0]!);
    next.socket.write('room again');
    await waitFor(() => next.received().toString() === 'room again', 'an echo on the freed slot');
    proc.kill('SIGTERM');
    await proc.exited;
  });

  it('closing the session ends every forwarded connection on both ends within 5 s, and the command exits 1 saying so', async () => {
    const svc = await echo();
    const { proc, ports } = await forward('pf-dev', [`0:127.0.0.1:${svc.port}`]);
    const conns = await Promise.all([dial(ports[0]!), dial(ports[0]!), dial(ports[0]!)]);
    for (const c of conns) c.socket.write('x');
    await waitFor(() => svc.sockets.length === 3 && conns.every((c) => c.received().length === 1), 'three live connections');
    const [session] = await sessionsOf('pf-dev');
    const t0 = Date.now();
    expect((await stack.admin.del(`/v1/remote-access/sessions/${session!.session_id}`)).status).toBe(200);
    await Promise.all(conns.map((c) => c.closed));
    await waitFor(() => svc.sockets.every((s) => s.destroyed || s.readableEnded), 'the device side to be cut', 5000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await proc.exited).code).toBe(1);
    expect(proc.stderr.join('\n')).toContain('tether: the session was closed');
  });

  it('the TTL running out ends every forwarded connection on both ends within 5 s', async () => {
    const svc = await echo();
    const { proc, ports } = await forward('pf-dev', [`0:127.0.0.1:${svc.port}`], ['--ttl', '60']);
    const c = await dial(ports[0]!);
    c.socket.write('x');
    await waitFor(() => c.received().length === 1, 'a live connection');
    const t0 = Date.now();
    offset += 61_000;
    await c.closed;
    await waitFor(() => svc.sockets.every((s) => s.destroyed || s.readableEnded), 'the device side to be cut', 5000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect((await proc.exited).code).toBe(1);
    expect(proc.stderr.join('\n')).toContain('tether: the session expired');
  });

  it('dials the stream again when it is lost under it (the agent restarted), and new connections work', async () => {
    const { token, agent } = await stack.onlineDevice('pf-restart');
    const svc = await echo();
    const { proc, ports } = await forward('pf-restart', [`0:127.0.0.1:${svc.port}`]);
    const before = await dial(ports[0]!);
    before.socket.write('before');
    await waitFor(() => before.received().toString() === 'before', 'an echo before the restart');

    await agent.stop();
    await before.closed; // in flight when the stream went: lost with it
    await proc.waitForLine(/the device's agent stopped; connecting again/);
    const again = stack.startAgent('pf-restart', token);
    closers.push(() => again.kill('SIGKILL'));
    await stack.waitForStatus('pf-restart', 'online');
    const after = await waitFor(
      async () => {
        const c = await dial(ports[0]!);
        c.socket.write('after');
        await Promise.race([c.closed, waitFor(() => c.received().toString() === 'after', 'an echo', 2000).catch(() => {})]);
        return c.received().toString() === 'after' && c;
      },
      'a connection through the stream dialled again',
      30_000,
    );
    expect(after.received().toString()).toBe('after');
    expect(proc.child.exitCode).toBeNull();
    proc.kill('SIGTERM');
    expect((await proc.exited).code).toBe(0);
  }, 60_000);

  it("resets a connection idle past the agent's idle timeout, saying so", async () => {
    await stack.onlineDevice('pf-idle', { TETHER_FORWARD_IDLE_TIMEOUT: '1' });
    const svc = await echo();
    const { proc, ports } = await forward('pf-idle', [`0:127.0.0.1:${svc.port}`]);
    const c = await dial(ports[0]!);
    c.socket.write('x');
    await waitFor(() => c.received().length === 1, 'a live connection');
    await c.closed;
    expect(c.error?.code).toBe('ECONNRESET');
    await proc.waitForLine(/connection 1 to .* reset by the device: idle \(no data either way for 1 s\)/);
    proc.kill('SIGTERM');
    await proc.exited;
  });
});

describe('the stream, spoken by a raw client', () => {
  /** Opens a port-forward session to `targets` and connects a raw stream client. */
  async function rawSession(targets: string[]) {
    const opened = await stack.as(engineer).post('/v1/remote-access/sessions', { device_id: 'pf-dev', protocol: 'port-forward', targets });
    expect(opened.status, opened.text).toBe(201);
    const s = opened.body.data;
    closers.push(() => void stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`));
    const client = connectStream(s.websocket_url);
    await client.opened;
    closers.push(() => client.ws.terminate());
    return { s, client };
  }
  /** The payloads of connection `id` in a byte stream of whole records. */
  const payloadOf = (stream: Buffer, id: number): Buffer => {
    const parts: Buffer[] = [];
    for (let at = 0; at + RECORD_HEADER_BYTES <= stream.length;) {
      const length = stream.readUInt32BE(at + 4);
      if (stream.readUInt32BE(at) === id) parts.push(stream.subarray(at + RECORD_HEADER_BYTES, at + RECORD_HEADER_BYTES + length));
      at += RECORD_HEADER_BYTES + length;
    }
    return Buffer.concat(parts);
  };
  const record = (id: number, data: Buffer) => {
    const header = Buffer.alloc(RECORD_HEADER_BYTES);
    header.writeUInt32BE(id, 0);
    header.writeUInt32BE(data.length, 4);
    return Buffer.concat([header, data]);
  };

  it("the agent refuses a target that is not one of the session's, and the byte counters are exactly what crossed", async () => {
    const svc = await echo();
    const { s, client } = await rawSession([`127.0.0.1:${svc.port}`]);
    client.send({ type: 'open', id: 7, target: '127.0.0.1:1' });
    expect(await client.waitForMessage((m) => m.id === 7)).toMatchObject({ type: 'reset', reason: 'not_allowed' });

    client.send({ type: 'open', id: 8, target: `127.0.0.1:${svc.port}` });
    await client.waitForMessage((m) => m.id === 8 && m.type === 'opened');
    // records may be cut anywhere: a header split across frames, two records in one frame
    const whole = Buffer.concat([record(8, Buffer.from('abc')), record(8, Buffer.from('defgh'))]);
    client.send(whole.subarray(0, 5));
    client.send(whole.subarray(5));
    client.send({ type: 'end', id: 8 });
    await waitFor(() => payloadOf(client.received(), 8).toString() === 'abcdefgh', 'the echo');
    await client.waitForMessage((m) => m.id === 8 && m.type === 'end');

    const closed = (await stack.admin.del(`/v1/remote-access/sessions/${s.session_id}`)).body.data;
    expect(closed.bytes_to_device).toBe(client.sentBytes);
    expect(closed.bytes_from_device).toBe(client.receivedBytes);
  });

  /** Sends within connection 1's window until nothing reads on the device side and no more credit comes. */
  async function fillUntilStalled(client: Awaited<ReturnType<typeof rawSession>>['client']) {
    const granted = () => FORWARD_WINDOW + client.messages.filter((m) => m.id === 1 && m.type === 'credit').reduce((n, m) => n + (m.bytes as number), 0);
    let sent = 0;
    let lastGrant = -1;
    let quietSince = Date.now();
    while (Date.now() - quietSince < 500) {
      const now = granted();
      if (now !== lastGrant) {
        lastGrant = now;
        quietSince = Date.now();
      }
      const room = Math.min(now - sent, 256 * 1024);
      if (room > 0) {
        client.send(record(1, Buffer.alloc(room)));
        sent += room;
      } else await new Promise((r) => setTimeout(r, 20));
    }
    return granted() - sent; // the window left
  }

  it('resets a connection whose peer sends past its window, and closes the stream on bytes that are not records', async () => {
    const svc = await service((s) => s.pause()); // reads nothing: no credit comes back
    const { client } = await rawSession([`127.0.0.1:${svc.port}`]);
    client.send({ type: 'open', id: 1, target: `127.0.0.1:${svc.port}` });
    await client.waitForMessage((m) => m.id === 1 && m.type === 'opened');
    // Send within the window until the device side's kernel buffers are full and credit stops
    // coming (nothing reads there), then one byte past what was granted.
    const left = await fillUntilStalled(client);
    for (let sent = 0; sent <= left; sent += 256 * 1024) client.send(record(1, Buffer.alloc(Math.min(256 * 1024, left + 1 - sent))));
    expect(await client.waitForMessage((m) => m.id === 1 && m.type === 'reset')).toMatchObject({ reason: 'protocol' });

    client.send(record(0, Buffer.from('x')));
    expect(await client.closed).toMatchObject({ code: 4400, reason: expect.stringContaining('port-forward protocol error') });
  });
});
