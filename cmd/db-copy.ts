/**
 * @module `tether db copy` (docs/cli.md, CONTRACT 10.1): a SQLite installation's database moved
 * into an empty PostgreSQL database, for peers. The source is read from a snapshot (SQLite's
 * online backup API into a temp dir: consistent while a server runs and writes), brought to this
 * build's schema there, so the source itself is never changed. The target must be empty; tether's
 * own migrations create its schema, one transaction fills it (api/store/copy.ts), and every table
 * is then compared with the source by count and SHA-256.
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type pg from 'pg';
import { BackupError, copyDatabase } from '../api/store/backup';
import {
  CopyError,
  copyTables,
  describeOccupied,
  inspectTarget,
  NOT_COPIED,
  postgresMessage,
  sourceCounts,
  verifyCopy,
  type CopyProgress,
  type Occupied,
  type TableCheck,
  type TableName,
  type TargetState,
} from '../api/store/copy';
import { DB_FILE, LATEST_SCHEMA, migratePostgres, openSqliteFile, postgresPool, type Db } from '../api/store/db';
import { TABLES } from '../api/store/schema';
import { CliError, usageError } from '../cli/errors';
import { table } from '../cli/output';

export type DbCopyOptions = { from: string; to: string; dryRun: boolean };

/** Results on `out` (a line each), progress on `err`; `tty`: `err` is a terminal, where progress rewrites one line. */
export type DbCopyIo = { out(line: string): void; err(text: string): void; tty: boolean };

const processIo: DbCopyIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (text) => process.stderr.write(text),
  tty: process.stderr.isTTY === true,
};

/** A progress line at least this often (rows) when stderr is not a terminal. */
const PROGRESS_EVERY = 10_000;
const POSTGRES_URL = /^postgres(ql)?:\/\/[^/\s]+\/[^/\s?]+(\?\S*)?$/;

/** `url` without its password, for messages. */
export function shownUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return 'the PostgreSQL URL';
  }
}

/** Fails (a usage mistake) unless `url` is a PostgreSQL URL as `tether server` takes it. */
export function checkPostgresUrl(url: string, what: string): void {
  if (!POSTGRES_URL.test(url) || !URL.canParse(url)) throw usageError(`${what} must be postgres://USER[:PASSWORD]@HOST:PORT/DATABASE`);
}

/** `message` with the password of `url` blanked out, should a driver ever quote it. */
function scrubbed(message: string, url: string): string {
  const password = URL.canParse(url) ? decodeURIComponent(new URL(url).password) : '';
  return password ? message.split(password).join('***') : message;
}

/** A pool of one connection on `url`, connected once to prove it answers (else: unreachable, exit 1). */
export async function connectPostgres(url: string): Promise<pg.Pool> {
  const pool = postgresPool(url, 1);
  try {
    (await pool.connect()).release();
  } catch (err) {
    await pool.end().catch(() => {});
    throw new CliError(`cannot reach PostgreSQL at ${shownUrl(url)}: ${scrubbed(postgresMessage(err), url)}`, 'unreachable');
  }
  return pool;
}

/** The database file `path` names: the file itself, or `tether.db` in the directory. */
function sourceFile(path: string): string {
  const full = resolve(path);
  if (!existsSync(full)) throw new CliError(`${full}: no such file or directory (--from takes a ${DB_FILE} or the data dir holding it)`, 'not_found');
  if (!statSync(full).isDirectory()) return full;
  const file = join(full, DB_FILE);
  if (!existsSync(file)) throw new CliError(`no tether database in ${full} (no ${DB_FILE} there)`, 'not_found');
  return file;
}

/** The source's copy, at LATEST_SCHEMA; `version`: the source's own. */
type Snapshot = { db: Db; version: number; bytes: number; close(): void };

/** A note when recordings of the source are files in its data dir (as SQLite has them), not rows. */
function recordingFiles(snapshot: Snapshot, file: string): string | undefined {
  const inFiles = snapshot.db.prepare(
    'SELECT count(*) FROM recordings r WHERE NOT EXISTS (SELECT 1 FROM recording_chunks c WHERE c.session_id = r.session_id)',
  );
  const n = Number(inFiles.pluck().get());
  if (n === 0) return undefined;
  const dir = join(dirname(file), 'recordings');
  return `note: ${n} recording(s) are files in ${dir}, not rows: start the first server on PostgreSQL with that data dir (TETHER_DATA_DIR); it moves them into the database`;
}

/** A checked snapshot of `file` in a temp dir, migrated there to this build's schema. */
async function snapshotOf(file: string): Promise<Snapshot> {
  const dir = mkdtempSync(join(tmpdir(), 'tether-db-copy-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  try {
    const copy = await copyDatabase(file, join(dir, DB_FILE), false);
    if (copy.schemaVersion > LATEST_SCHEMA) {
      throw new CliError(
        `${file} has schema version ${copy.schemaVersion}, newer than this tether understands (${LATEST_SCHEMA}): run the tether of the server's version`,
        'too_new',
      );
    }
    const db = openSqliteFile(dir);
    const close = () => {
      try {
        db.close();
      } catch {
        // a statement was running (an interrupt): the files go anyway
      }
      remove();
    };
    return { db, version: copy.schemaVersion, bytes: copy.bytes, close };
  } catch (err) {
    remove();
    throw err instanceof BackupError ? new CliError(err.message, err.code) : err;
  }
}

/** Refuses a target the copy cannot go into: not UTF8, of a newer tether, made by something else, or not empty. */
function refuseUnusable(state: TargetState, shown: string): void {
  if (state.encoding !== 'UTF8') {
    throw new CliError(`${shown} has encoding ${state.encoding}; tether needs a UTF8 database (CREATE DATABASE … ENCODING 'UTF8')`, 'bad_target');
  }
  if (state.schemaVersion !== undefined && state.schemaVersion > LATEST_SCHEMA) {
    throw new CliError(`${shown} has schema version ${state.schemaVersion}, newer than this tether understands (${LATEST_SCHEMA})`, 'too_new');
  }
  if (state.foreignTetherTables.length > 0) {
    throw new CliError(
      `${shown} has tables named as tether's that tether did not make (${state.foreignTetherTables.join(', ')}): copy into an empty database`,
      'not_empty',
    );
  }
  if (state.occupied.length > 0) {
    throw new CliError(`${shown} is not empty: ${describeOccupied(state.occupied)}; tether db copy copies into an empty database only`, 'not_empty');
  }
}

const schemaNote = (state: TargetState) =>
  state.schemaVersion === undefined
    ? `no tether schema yet (tether's migrations create schema version ${LATEST_SCHEMA})`
    : state.schemaVersion < LATEST_SCHEMA
      ? `tether schema version ${state.schemaVersion} (migrated to ${LATEST_SCHEMA})`
      : `tether schema version ${state.schemaVersion}, no rows`;

const TETHER_TABLES = new Set<string>(TABLES);

/** Why the source's table `name` is not copied; undefined when it is. */
function notCopied(name: string): string | undefined {
  if (!TETHER_TABLES.has(name)) return 'not copied: not a tether table';
  const why = NOT_COPIED[name as TableName];
  return why && `not copied: ${why}`;
}

/** Progress of the copy on stderr: one line rewritten on a terminal, else a line per PROGRESS_EVERY rows and at each table's end. */
function progressPrinter(io: DbCopyIo): (p: CopyProgress) => void {
  let current = '';
  let shownAt = 0;
  return ({ table: name, copied, total }) => {
    if (name !== current) [current, shownAt] = [name, 0];
    const line = `copying ${name}: ${copied}/${total} rows`;
    const done = copied >= total;
    if (io.tty) io.err(`\r\x1b[K${line}${done ? '\n' : ''}`);
    else if (done || copied - shownAt >= PROGRESS_EVERY) {
      shownAt = copied;
      io.err(`${line}\n`);
    }
  };
}

const short = (sha256: string) => sha256.slice(0, 16);

/** The rows per table, as the source has them and the target got them; the tables that did not match. */
function report(counts: readonly Occupied[], checks: readonly TableCheck[], io: DbCopyIo): string[] {
  const mismatched: string[] = [];
  const rows = counts.map(({ table: name, rows: source }) => {
    const check = checks.find((c) => c.table === name);
    if (!check) return { table: name, source, target: '-', 'sha-256': notCopied(name) ?? 'not copied' };
    const same = check.source.rows === check.target.rows && check.source.sha256 === check.target.sha256;
    if (!same) mismatched.push(name);
    const sha = same ? `${short(check.source.sha256)} (same)` : `MISMATCH: source ${short(check.source.sha256)}, target ${short(check.target.sha256)}`;
    return { table: name, source: check.source.rows, target: check.target.rows, 'sha-256': sha };
  });
  io.out(table(rows, ['table', 'source', 'target', 'sha-256']).trimEnd());
  return mismatched;
}

/** Installs handlers that remove the snapshot on SIGINT or SIGTERM and say what became of the copy. */
function onInterrupt(cleanup: () => void, committed: () => boolean): () => void {
  const handler = (signal: NodeJS.Signals) => {
    cleanup();
    const outcome = committed() ? 'the copy was committed but not verified' : 'nothing was copied (PostgreSQL rolls the transaction back)';
    process.stderr.write(`tether: interrupted by ${signal}: ${outcome}\n`);
    process.exit(1);
  };
  process.once('SIGINT', handler);
  process.once('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

const asCliError = (err: unknown) => (err instanceof CopyError ? new CliError(err.message, err.code) : err);

/** Copies, verifies and reports; the target was found empty. */
async function copyAndVerify(snapshot: Snapshot, pool: pg.Pool, shown: string, io: DbCopyIo, committed: () => void): Promise<void> {
  try {
    await migratePostgres(pool);
  } catch (err) {
    throw new CliError(`migrating ${shown} failed: ${postgresMessage(err)}`, 'copy_failed');
  }
  const copied = await copyTables(snapshot.db, pool, progressPrinter(io)).catch((err: unknown) => {
    throw asCliError(err);
  });
  committed();
  io.err('committed; verifying every table against the source\n');
  const checks = await verifyCopy(snapshot.db, pool);
  const mismatched = report(sourceCounts(snapshot.db), checks, io);
  if (mismatched.length > 0) {
    throw new CliError(
      `verification failed: ${mismatched.join(', ')} in ${shown} differ from the source (see the table above); do not run servers on it: drop and recreate the database, then copy again`,
      'mismatch',
    );
  }
  const total = [...copied.values()].reduce((a, b) => a + b, 0);
  io.out(`copied ${total} rows in ${copied.size} tables into ${shown}; verified: every table's row count and SHA-256 match the source`);
}

/** Says what a copy would do, having checked both ends; writes nothing to the target. */
function dryRun(snapshot: Snapshot, state: TargetState, shown: string, io: DbCopyIo): void {
  const counts = sourceCounts(snapshot.db);
  const rows = counts.map((c) => ({ table: c.table, rows: c.rows, copy: notCopied(c.table) ?? 'would be copied' }));
  io.out(`target ${shown}: reachable, empty, ${schemaNote(state)}`);
  io.out(table(rows, ['table', 'rows', 'copy']).trimEnd());
  const copied = rows.filter((r) => r.copy === 'would be copied');
  io.out(`dry run: would copy ${copied.reduce((n, r) => n + r.rows, 0)} rows in ${copied.length} tables; nothing was written`);
}

/** `tether db copy`: the SQLite database at `from` into the empty PostgreSQL database `to`. */
export async function dbCopy(options: DbCopyOptions, io: DbCopyIo = processIo): Promise<void> {
  checkPostgresUrl(options.to, '--to');
  const shown = shownUrl(options.to);
  const file = sourceFile(options.from);
  const pool = await connectPostgres(options.to);
  try {
    const state = await inspectTarget(pool).catch((err: unknown) => {
      throw new CliError(`cannot read ${shown}: ${postgresMessage(err)}`, 'unreachable');
    });
    refuseUnusable(state, shown);
    const snapshot = await snapshotOf(file);
    let committed = false;
    const restore = onInterrupt(snapshot.close, () => committed);
    try {
      const upgraded = snapshot.version < LATEST_SCHEMA ? `, brought to ${LATEST_SCHEMA} in the snapshot` : '';
      const source = `source ${file}: schema version ${snapshot.version}${upgraded}, snapshot of ${snapshot.bytes} bytes checked`;
      if (options.dryRun) {
        io.out(source);
        dryRun(snapshot, state, shown, io);
      } else {
        io.err(`${source}\ntarget ${shown}: empty, ${schemaNote(state)}\n`);
        await copyAndVerify(snapshot, pool, shown, io, () => (committed = true));
      }
      const note = recordingFiles(snapshot, file);
      if (note) io.out(note);
    } finally {
      restore();
      snapshot.close();
    }
  } finally {
    await pool.end();
  }
}
