/**
 * @module Copies a SQLite database into an empty PostgreSQL one (`tether db copy`, CONTRACT 10.1)
 * and proves the copy: every table of `TABLES` in its order (parents first), in batches, inside
 * one PostgreSQL transaction, so a failure leaves the target as empty as it was; identity columns
 * keep their values and their sequences move past them. The proof compares, per table, the count
 * and a SHA-256 over the rows in primary-key order, each row written the same way on both sides
 * (the target's column order; numbers as numbers, text as text, binary as hex).
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import type { Db } from './db';
import { TABLES, type Schema } from './schema';

export type TableName = keyof Schema;

/** Tables of runtime state, not data: never copied, and why. */
export const NOT_COPIED: Readonly<Partial<Record<TableName, string>>> = {
  peers: 'runtime state: each server running on the database registers itself',
  rate_limit_hits: 'runtime state: rate-limit windows start afresh',
};

/** Rows per INSERT at most (and fewer when they are large: BATCH_BYTES). */
export const BATCH_ROWS = 1000;
const BATCH_BYTES = 8 * 1024 * 1024;
const MAX_PARAMETERS = 65_535; // PostgreSQL's limit per statement

export type CopyErrorCode = 'not_empty' | 'not_a_database' | 'copy_failed' | 'mismatch';

/** A copy that cannot be made or did not prove; `code` says why. */
export class CopyError extends Error {
  override name = 'CopyError';
  constructor(
    message: string,
    readonly code: CopyErrorCode,
  ) {
    super(message);
  }
}

type Query = Pick<pg.ClientBase, 'query'>;
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;
const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;
function countOf(src: Db, table: string): number {
  const count = src.prepare(`SELECT count(*) FROM ${ident(table)}`);
  return Number(count.pluck().get());
}

/** A table with rows that a copy would not be alone in. */
export type Occupied = { table: string; rows: number };

/**
 * What the target holds before a copy: its encoding (the copy needs UTF8: text, and its byte
 * order as SQLite's), `schema_version` (undefined: tether's migrations never ran there), tether's
 * tables present although they never ran (made by something else), and the tables holding rows
 * (tether's but `schema_version`, and any other table of any schema).
 */
export type TargetState = { encoding: string; schemaVersion: number | undefined; foreignTetherTables: string[]; occupied: Occupied[] };

/** `schema_version` of the database `db` queries; undefined when tether's migrations never ran there. */
export async function postgresSchemaVersion(db: Query): Promise<number | undefined> {
  const { rows } = await db.query<{ exists: boolean }>("SELECT to_regclass('schema_version') IS NOT NULL AS exists");
  if (!rows[0]?.exists) return undefined;
  const version = await db.query<{ version: number }>('SELECT max(version) AS version FROM schema_version');
  return version.rows[0]?.version ?? undefined;
}

/** Tables with rows, of `tables` (schema-qualified identifiers) and their names for people. */
async function occupiedOf(db: Query, tables: { sql: string; name: string }[]): Promise<Occupied[]> {
  const occupied: Occupied[] = [];
  for (const t of tables) {
    const { rows } = await db.query<{ any: boolean }>(`SELECT EXISTS (SELECT 1 FROM ${t.sql}) AS any`);
    if (!rows[0]?.any) continue;
    const count = await db.query<{ n: number }>(`SELECT count(*) AS n FROM ${t.sql}`);
    occupied.push({ table: t.name, rows: Number(count.rows[0]?.n) });
  }
  return occupied;
}

/** Reads what the target holds, writing nothing. */
export async function inspectTarget(db: Query): Promise<TargetState> {
  const encoding = (await db.query<{ server_encoding: string }>('SHOW server_encoding')).rows[0]?.server_encoding ?? '';
  const schemaVersion = await postgresSchemaVersion(db);
  const { rows } = await db.query<{ schema: string; name: string; here: boolean }>(
    `SELECT n.nspname AS schema, c.relname AS name, n.nspname = current_schema() AS here
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind IN ('r', 'p') AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
      ORDER BY n.nspname, c.relname`,
  );
  const ours = (r: { name: string; here: boolean }) => r.here && (TABLES as readonly string[]).includes(r.name);
  const foreignTetherTables = schemaVersion === undefined ? rows.filter(ours).map((r) => r.name) : [];
  // tether's tables first, in their order (users before audit), then any other
  const rank = (r: { name: string; here: boolean }) => (ours(r) ? TABLES.indexOf(r.name as TableName) : TABLES.length);
  const tables = rows
    .filter((r) => !(r.here && r.name === 'schema_version'))
    .sort((a, b) => rank(a) - rank(b))
    .map((r) => ({ sql: `${ident(r.schema)}.${ident(r.name)}`, name: r.here ? r.name : `${r.schema}.${r.name}` }));
  return { encoding, schemaVersion, foreignTetherTables, occupied: await occupiedOf(db, tables) };
}

/** Says which tables hold rows, as a refusal does. */
export function describeOccupied(occupied: readonly Occupied[]): string {
  const listed = occupied.slice(0, 8).map((o) => `${o.table} holds ${plural(o.rows, 'row')}`);
  if (occupied.length > 8) listed.push(`and ${plural(occupied.length - 8, 'more table')}`);
  const server = occupied.some((o) => o.table === 'peers') ? ' (a tether server runs on it?)' : '';
  return `${listed.join(', ')}${server}`;
}

/** A table as the target has it: its columns in order, its primary key, its identity columns. */
type Layout = { table: TableName; columns: string[]; key: string[]; identity: string[] };

/** Every row of the table, the target's columns in its order, in key order (SQL both stores run). */
const selectAll = (l: Layout) => `SELECT ${l.columns.map(ident).join(', ')} FROM ${ident(l.table)} ORDER BY ${l.key.map(ident).join(', ')}`;

async function layoutsOf(db: Query): Promise<Map<TableName, Layout>> {
  const layouts = new Map<TableName, Layout>(TABLES.map((table) => [table, { table, columns: [], key: [], identity: [] }]));
  const { rows } = await db.query<{ table: TableName; column: string; identity: boolean; key: number | null }>(
    `SELECT c.relname AS table, a.attname AS column, a.attidentity <> '' AS identity, array_position(i.indkey::int2[], a.attnum) - array_lower(i.indkey::int2[], 1) AS key
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
      WHERE n.nspname = current_schema() AND c.relname = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
    [TABLES],
  );
  for (const c of rows) {
    const layout = layouts.get(c.table)!;
    layout.columns.push(c.column);
    if (c.identity) layout.identity.push(c.column);
    if (c.key !== null) layout.key[c.key] = c.column; // int2vector counts from 0
  }
  for (const l of layouts.values()) {
    if (l.key.length === 0) throw new CopyError(`the target has no table ${l.table} with a primary key: not tether's schema`, 'not_a_database');
  }
  return layouts;
}

/** Fails unless the source's table has exactly the target's columns. */
function checkSourceColumns(src: Db, layout: Layout): void {
  const names = (src.prepare('SELECT name FROM pragma_table_info(?)').pluck().all(layout.table) as string[]).sort();
  const expected = [...layout.columns].sort();
  if (names.join() !== expected.join()) {
    throw new CopyError(`table ${layout.table} has columns (${names.join(', ')}) in the source and (${expected.join(', ')}) in the target`, 'not_a_database');
  }
}

/** The rows of each table the source holds: tether's, then any other (never copied). */
export function sourceCounts(src: Db): Occupied[] {
  const others = src
    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name")
    .pluck()
    .all() as string[];
  const tables = [...TABLES, ...others.filter((name) => !(TABLES as readonly string[]).includes(name))];
  return tables.map((table) => ({ table, rows: countOf(src, table) }));
}

export type CopyProgress = { table: TableName; copied: number; total: number };

const sizeOf = (row: readonly unknown[]) => row.reduce<number>((n, v) => n + (typeof v === 'string' || Buffer.isBuffer(v) ? v.length : 8), 16);

/** Copies one table's rows in key order, a batch per INSERT; resolves to how many. */
async function copyTable(src: Db, db: Query, layout: Layout, progress: (p: CopyProgress) => void): Promise<number> {
  checkSourceColumns(src, layout);
  const { table, columns } = layout;
  const total = countOf(src, table);
  const perBatch = Math.min(BATCH_ROWS, Math.floor(MAX_PARAMETERS / columns.length));
  const names = columns.map(ident).join(', ');
  let batch: unknown[][] = [];
  let bytes = 0;
  let copied = 0;
  const flush = async () => {
    const values = batch.map((_, r) => `(${columns.map((_c, c) => `$${r * columns.length + c + 1}`).join(', ')})`);
    await db.query(`INSERT INTO ${ident(table)} (${names}) VALUES ${values.join(', ')}`, batch.flat());
    copied += batch.length;
    batch = [];
    bytes = 0;
    progress({ table, copied, total });
  };
  for (const row of src.prepare(selectAll(layout)).raw(true).iterate() as IterableIterator<unknown[]>) {
    batch.push(row);
    bytes += sizeOf(row);
    if (batch.length >= perBatch || bytes >= BATCH_BYTES) await flush();
  }
  if (batch.length > 0) await flush();
  else if (copied === 0) progress({ table, copied, total });
  return copied;
}

/** PostgreSQL's message for `err`, with its detail (the key a constraint refused) when it has one. */
export function postgresMessage(err: unknown): string {
  const e = err as { message?: string; detail?: string; errors?: { message?: string }[] };
  const message = e.message || e.errors?.map((x) => x.message).join('; ') || String(err);
  return e.detail ? `${message} (${e.detail})` : message;
}

/**
 * Copies every table of the source but NOT_COPIED into the target in one transaction, under an
 * exclusive lock of tether's tables, after checking again under it that they are empty. The
 * target is at the source's schema already. Resolves to the rows copied per table.
 */
export async function copyTables(src: Db, pool: pg.Pool, progress: (p: CopyProgress) => void): Promise<Map<TableName, number>> {
  const client = await pool.connect();
  const copied = new Map<TableName, number>();
  let step = 'locking the target';
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    await client.query("SET LOCAL lock_timeout = '10s'");
    await client.query(`LOCK TABLE ${TABLES.map(ident).join(', ')} IN EXCLUSIVE MODE`);
    const occupied = await occupiedOf(
      client,
      TABLES.map((t) => ({ sql: ident(t), name: t })),
    );
    if (occupied.length > 0) throw new CopyError(`the target is not empty: ${describeOccupied(occupied)}`, 'not_empty');
    const layouts = await layoutsOf(client);
    for (const layout of layouts.values()) {
      if (NOT_COPIED[layout.table]) continue;
      step = `copying ${layout.table}`;
      copied.set(layout.table, await copyTable(src, client, layout, progress));
      for (const column of layout.identity) {
        // The next identity value follows the copied ones (1 when there are none).
        await client.query(
          `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(max(${ident(column)}), 1), max(${ident(column)}) IS NOT NULL) FROM ${ident(layout.table)}`,
          [ident(layout.table), column],
        );
      }
    }
    step = 'committing';
    await client.query('COMMIT');
    return copied;
  } catch (err) {
    broken = err as Error;
    await client.query('ROLLBACK').catch(() => {});
    if (err instanceof CopyError) throw err;
    const outcome =
      step === 'committing'
        ? 'the answer to COMMIT was lost, so the copy may or may not be there: run tether db copy --dry-run to see'
        : 'nothing was copied (the transaction was rolled back; the target holds no rows)';
    throw new CopyError(`${step} failed: ${postgresMessage(err)}; ${outcome}`, 'copy_failed');
  } finally {
    client.release(broken);
  }
}

/** A table's count of rows and SHA-256 of them. */
export type Digest = { rows: number; sha256: string };
/** One table's digest on each side. */
export type TableCheck = { table: TableName; source: Digest; target: Digest };

/** A row as both sides write it for the checksum: JSON of its values, binary as `{"hex": …}`. */
export const canonicalRow = (row: readonly unknown[]): string => JSON.stringify(row.map((v) => (Buffer.isBuffer(v) ? { hex: v.toString('hex') } : v)));

function sourceDigest(src: Db, layout: Layout): Digest {
  const hash = createHash('sha256');
  let rows = 0;
  for (const row of src.prepare(selectAll(layout)).raw(true).iterate() as IterableIterator<unknown[]>) {
    hash.update(`${canonicalRow(row)}\n`);
    rows++;
  }
  return { rows, sha256: hash.digest('hex') };
}

/** The target's rows in key order, a page at a time (keyset: each page after the last key). */
async function targetDigest(db: Query, layout: Layout): Promise<Digest> {
  const hash = createHash('sha256');
  let rows = 0;
  const keyAt = layout.key.map((k) => layout.columns.indexOf(k));
  const [select, order] = selectAll(layout).split(' ORDER BY ');
  let after: unknown[] | undefined;
  for (;;) {
    const where = after ? ` WHERE (${order}) > (${after.map((_, i) => `$${i + 1}`).join(', ')})` : '';
    const page = await db.query<unknown[]>({ text: `${select}${where} ORDER BY ${order} LIMIT ${BATCH_ROWS}`, values: after ?? [], rowMode: 'array' });
    for (const row of page.rows) hash.update(`${canonicalRow(row)}\n`);
    rows += page.rows.length;
    if (page.rows.length < BATCH_ROWS) break;
    const last = page.rows.at(-1)!;
    after = keyAt.map((i) => last[i]);
  }
  return { rows, sha256: hash.digest('hex') };
}

/** Counts and checksums every copied table on both sides, the target in one snapshot of its own. */
export async function verifyCopy(src: Db, pool: pg.Pool): Promise<TableCheck[]> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const checks: TableCheck[] = [];
    for (const layout of (await layoutsOf(client)).values()) {
      if (NOT_COPIED[layout.table]) continue;
      checks.push({ table: layout.table, source: sourceDigest(src, layout), target: await targetDigest(client, layout) });
    }
    await client.query('COMMIT');
    return checks;
  } catch (err) {
    broken = err as Error;
    throw err;
  } finally {
    client.release(broken);
  }
}
