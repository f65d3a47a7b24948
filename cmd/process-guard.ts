/**
 * @module The last line of defence of a long-running process (server, agent): an error that
 * escapes every handler is logged with its stack and counted, and the process goes on serving
 * the others, instead of ending every agent's connection and every operator's session at once.
 * It hides nothing: each escape is an error-level line (`uncaught error`), a metric on the
 * server, and a test failure (the tests fail on any such line of a process they started, and
 * in-process servers never install the guard, so the test runner sees the error itself).
 */
import type { Logger } from '../shared/log';

/** The `msg` of the log line of an escaped error; the tests look for it. */
export const ESCAPED_ERROR_MSG = 'uncaught error';

/** Installs the guard; returns the function that removes it. */
export function guardProcess(log: Logger, onEscape: (kind: 'exception' | 'rejection') => void = () => {}): () => void {
  function onUncaughtException(err: Error): void {
    onEscape('exception');
    log.error(ESCAPED_ERROR_MSG, { kind: 'exception', err });
  }
  function onUnhandledRejection(reason: unknown): void {
    onEscape('rejection');
    log.error(ESCAPED_ERROR_MSG, { kind: 'rejection', err: reason instanceof Error ? reason : new Error(String(reason)) });
  }
  process.on('uncaughtException', onUncaughtException);
  process.on('unhandledRejection', onUnhandledRejection);
  return function unguard() {
    process.off('uncaughtException', onUncaughtException);
    process.off('unhandledRejection', onUnhandledRejection);
  };
}
