/**
 * @module A tiny structured logger with a level threshold and child loggers that carry fixed
 * fields (component, request id, device id ...). Lines go to stderr as JSON objects (the
 * default: services, journald) or as short human-readable text for a terminal
 * (`12:00:01 warn  agent: message key=value`; docs/settings.md, agent).
 */

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_FORMATS = ['json', 'text'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

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
  /** `json` (the default): one JSON object per line; `text`: one line for people per record. */
  format?: LogFormat;
  /** Where lines go; stderr by default. Tests pass a collector. */
  write?: (line: string) => void;
}

/** Creates a logger writing lines at or above `level`. */
export function createLogger(options: LoggerOptions, base: LogFields = {}): Logger {
  const threshold = LOG_LEVELS.indexOf(options.level);
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const format = options.format === 'text' ? formatText : formatJson;

  function emit(level: LogLevel, msg: string, fields?: LogFields): void {
    if (LOG_LEVELS.indexOf(level) < threshold) return;
    write(format(new Date(), level, msg, { ...base, ...fields }));
  }

  return {
    debug: (msg, fields) => emit('debug', msg, fields),
    info: (msg, fields) => emit('info', msg, fields),
    warn: (msg, fields) => emit('warn', msg, fields),
    error: (msg, fields) => emit('error', msg, fields),
    child: (fields) => createLogger(options, { ...base, ...fields }),
  };
}

function formatJson(time: Date, level: LogLevel, msg: string, fields: LogFields): string {
  const record: LogFields = { time: time.toISOString(), level, msg, ...fields };
  const err = record.err;
  if (err instanceof Error) record.err = { name: err.name, message: err.message, stack: err.stack };
  return `${JSON.stringify(record)}\n`;
}

/**
 * `HH:MM:SS level component: msg key=value ...` in local time; an Error's stack follows on
 * indented lines. Control characters (C0, DEL, C1) are written as `\uXXXX` escapes wherever they
 * appear, so a logged name cannot move the cursor or restyle the operator's terminal.
 */
function formatText(time: Date, level: LogLevel, msg: string, fields: LogFields): string {
  const { component, ...rest } = fields;
  let line = `${time.toTimeString().slice(0, 8)} ${level.padEnd(5)} `;
  if (component !== undefined) line += `${escapeControls(String(component))}: `;
  line += escapeControls(msg);
  let stacks = '';
  for (const [key, value] of Object.entries(rest)) {
    if (value === undefined) continue;
    line += ` ${escapeControls(key)}=${textValue(value)}`;
    if (value instanceof Error && value.stack) {
      for (const frame of value.stack.split('\n').slice(1)) stacks += `\n    ${escapeControls(frame.trim())}`;
    }
  }
  return `${line}${stacks}\n`;
}

/** A field's value: bare when it is one printable word, else quoted or JSON. */
function textValue(value: unknown): string {
  if (value instanceof Error) return textValue(value.message);
  if (typeof value === 'string') return /^[^\s"=\\\u0000-\u001f\u007f-\u009f]+$/.test(value) ? value : escapeControls(JSON.stringify(value));
  if (typeof value === 'object' && value !== null) return escapeControls(JSON.stringify(value) ?? String(value));
  return escapeControls(String(value));
}

const escapeControls = (text: string): string => text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

/** A logger that drops everything, for library use where the caller passed none. */
export const silentLogger: Logger = createLogger({ level: 'error', write: () => {} });
