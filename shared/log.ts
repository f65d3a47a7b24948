/**
 * @module A tiny structured logger: one JSON object per line on stderr, with a level threshold
 * and child loggers that carry fixed fields (component, request id, device id ...).
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level: LogLevel;
  /** Where lines go; stderr by default. Tests pass a collector. */
  write?: (line: string) => void;
}

/** Creates a logger writing JSON lines at or above `level`. */
export function createLogger(options: LoggerOptions, base: LogFields = {}): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level);
  const write = options.write ?? ((line: string) => process.stderr.write(line));

  function emit(level: LogLevel, msg: string, fields?: LogFields): void {
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    const record: LogFields = { time: new Date().toISOString(), level, msg, ...base, ...fields };
    const err = record.err;
    if (err instanceof Error) record.err = { name: err.name, message: err.message, stack: err.stack };
    write(`${JSON.stringify(record)}\n`);
  }

  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (fields) => createLogger(options, { ...base, ...fields }),
  };
}

/** A logger that drops everything, for library use where the caller passed none. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });
