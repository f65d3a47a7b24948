/**
 * @module Section 6: requests per second and p99 latency for `GET /v1/remote-access/sessions/{id}`
 * and `GET /v1/services/{name}` over keep-alive connections (the server is one Node process,
 * so one core).
 */
import { Agent, request } from 'node:http';
import type { Session } from '../shared/api/sessions';
import { call, percentile, round, type Data, type Result, type ServerProcess } from './lib';

const CONCURRENCY = 32;

async function load(url: string, token: string, seconds: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const one = () =>
    new Promise<number>((done, fail) => {
      const req = request(url, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode!));
      });
      req.on('error', fail);
      req.end();
    });
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const t0 = performance.now();
        if ((await one()) !== 200) errors++;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / seconds, p99: percentile(latencies, 99), errors };
}

export async function apiBench(server: ServerProcess, seconds: number, sessionDevice: string): Promise<Result[]> {
  const session = await call<Data<Session>>(`${server.url}/v1/remote-access/sessions`, 'POST', server.token, {
    device_id: sessionDevice,
    protocol: 'diagnostics',
  });
  const yaml = 'service:\n  name: bench-web\n  image: registry.example.com/platform/bench-web:1.0.0\ndeployment:\n  replicas: 2\n';
  await new Promise<void>((done, fail) => {
    const req = request(
      `${server.url}/v1/services?env=dev`,
      {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/yaml' },
      },
      (res) => (res.resume(), res.on('end', () => done())),
    );
    req.on('error', fail);
    req.end(yaml);
  });
  const results: Result[] = [];
  for (const [name, path] of [
    ['GET /v1/remote-access/sessions/{id}', `/v1/remote-access/sessions/${session.body.data.session_id}`],
    ['GET /v1/services/{name}', '/v1/services/bench-web?env=dev'],
  ] as const) {
    await load(`${server.url}${path}`, server.token, Math.min(2, seconds)); // warm-up: JIT, caches
    const r = await load(`${server.url}${path}`, server.token, seconds);
    results.push(
      { section: 'api', name: `${name} requests/s`, value: round(r.rps, 0), unit: 'req/s', target: '>= 5000', met: r.rps >= 5000 },
      { section: 'api', name: `${name} p99`, value: round(r.p99, 2), unit: 'ms', target: 'reported', met: null },
      { section: 'api', name: `${name} errors`, value: r.errors, unit: 'requests', target: '0', met: r.errors === 0 },
    );
  }
  return results;
}
