/**
 * @module What a database error means, on either store: a constraint the database keeps (a
 * unique key, the last enabled administrator), or a database that did not answer. Decided from
 * the drivers' codes: SQLite's extended result codes, PostgreSQL's SQLSTATE.
 */

const codeOf = (err: unknown): unknown => (err as { code?: unknown } | null)?.code;

/** True when `err` is a UNIQUE or PRIMARY KEY constraint refusing a row. */
export function isUniqueViolation(err: unknown): boolean {
  const code = codeOf(err);
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** The message of SQLite's triggers (migration 6): the change would leave no enabled administrator. */
export const LAST_ADMINISTRATOR = 'last enabled administrator';

/** True when `err` is the database refusing to lose its last enabled administrator. */
export function isLastAdministratorViolation(err: unknown): boolean {
  const code = codeOf(err);
  // PostgreSQL's trigger raises its own SQLSTATE; SQLite's RAISE(ABORT) has one code for every
  // trigger, so its message (the trigger's own, from migration 6) tells which.
  if (code === 'TA001') return true;
  return code === 'SQLITE_CONSTRAINT_TRIGGER' && (err as Error).message === LAST_ADMINISTRATOR;
}

/**
 * The database did not answer: PostgreSQL is down, restarting, refusing connections, or the
 * connection broke mid-statement. The request may be retried later (503 `unavailable`); a write
 * that failed so may or may not have committed, so it is never retried here.
 */
export class DatabaseUnavailableError extends Error {
  override name = 'DatabaseUnavailableError';
  readonly code = 'unavailable';
  constructor(override readonly cause: unknown) {
    super(`the database did not answer: ${cause instanceof Error ? cause.message : String(cause)}`);
  }
}

export const isDatabaseUnavailable = (err: unknown): err is DatabaseUnavailableError => err instanceof DatabaseUnavailableError;

/** Node's socket errors: the connection to PostgreSQL failed or broke. */
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * True when an error from the PostgreSQL driver means no answer. The server's own answers carry a
 * five-character SQLSTATE; of those, class 08 (connection exception), 57P01-57P03 (shutting down,
 * cannot connect now) and 53300 (too many connections) mean no answer. pg's own errors for a
 * connection it lost or could not open in time carry no code at all.
 */
export function isLostConnection(err: unknown): boolean {
  const code = codeOf(err);
  if (code === undefined) return true;
  if (typeof code !== 'string') return false;
  if (SOCKET_ERRORS.has(code)) return true;
  return code.startsWith('08') || code === '57P01' || code === '57P02' || code === '57P03' || code === '53300';
}

/**
 * True when PostgreSQL refused a text value it cannot hold (a NUL character, or bytes that are no
 * UTF-8): the request carried it, so it is the request's fault (400), not a bug. SQLite stores any.
 */
export function isUnstorableText(err: unknown): boolean {
  const code = codeOf(err);
  return code === '22021' || code === '22P05';
}
