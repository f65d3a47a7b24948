/**
 * Real Docker for the docker runtime's end-to-end tests (a dockerd of the test's own, a registry
 * on loopback, tiny service images): the benchmarks' harness (`bench/docker.ts`, which the
 * deployment benchmark uses too). Whatever a test file leaves running is stopped when it ends.
 * Tests may use bench/; the product and its benchmarks never import the tests.
 */
import { afterAll } from 'vitest';
import { stopAllDocker } from '../../bench/docker';

export * from '../../bench/docker';

afterAll(stopAllDocker, 120_000);
