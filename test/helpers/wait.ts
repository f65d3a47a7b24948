/** Polling with a deadline: the tests wait for events, never for a fixed time (the benchmarks' helper). */
export { waitFor } from '../../bench/wait';
