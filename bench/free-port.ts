/**
 * @module A TCP port free on 127.0.0.1 a moment ago, from the kernel, for the programs the
 * benchmarks and tests start (PostgreSQL, NATS, a registry, sshd): they must be told their port.
 * Another program may take it in between; callers that care retry. (The tests use it through
 * test/helpers/: bench/ never imports the tests.)
 */
import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  const server = createServer();
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
