/**
 * A program some tests need from the system's packages (Chromium for the console, nats-server for
 * the cluster): the benchmarks' finder (`bench/system-program.ts`), which installs it with apt-get
 * when running as root and otherwise names the package in one line. Tests may use bench/; the
 * product and its benchmarks never import the tests.
 */
export { systemProgram } from '../../bench/system-program';
