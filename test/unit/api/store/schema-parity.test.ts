/**
 * The two stores have one schema: SQLite's migrations and PostgreSQL's produce the same tables,
 * columns (name, order, kind of type, nullability, default, primary key), unique keys, indexes
 * (partial or not) and foreign keys. One data layer reads both only while this holds.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../../../api/store/index';
import { tempDir } from '../../../helpers/temp';
import { freshPostgresUrl } from '../../../helpers/store';

interface Column {
  name: string;
  type: 'TEXT' | 'INTEGER' | 'REAL' | 'BLOB';
  notnull: boolean;
  default: string | null;
  pk: boolean;
}
interface Shape {
  columns: Column[];
  /** Column lists of unique keys other than the primary key (constraints and unique indexes alike). */
  unique: string[][];
  /** Explicit indexes: name, columns, unique, partial. */
  indexes: Array<{ name: string; columns: string[]; unique: boolean; partial: boolean }>;
  foreignKeys: Array<{ columns: string[]; table: string; references: string[]; onDelete: string }>;
}
type Schema = Record<string, Shape>;

const sortBy = <T>(items: T[], key: (t: T) => string) => [...items].sort((a, b) => key(a).localeCompare(key(b)));
/** `'[]'::text` and `'[]'` alike; numbers as they are. */
const normalDefault = (d: string | null) => (d === null ? null : d.replace(/::[\w ]+$/, '').replace(/^\((.*)\)$/, '$1'));

function sqliteSchema(store: Store): Schema {
  const db = store.sqlite!;
  const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name").all() as { name: string }[];
  const schema: Schema = {};
  for (const { name } of tables) {
    const info = db.prepare('SELECT * FROM pragma_table_info(?)').all(name) as {
      name: string;
      type: string;
      notnull: number;
      dflt_value: string | null;
      pk: number;
    }[];
    const columns = info.map((c) => ({
      name: c.name,
      type: (c.type === 'INTEGER' ? 'INTEGER' : c.type) as Column['type'],
      notnull: c.notnull === 1 || c.pk > 0,
      default: normalDefault(c.dflt_value),
      pk: c.pk > 0,
    }));
    const list = db.prepare('SELECT * FROM pragma_index_list(?)').all(name) as { name: string; unique: number; origin: string; partial: number }[];
    const colsOf = (index: string) => (db.prepare('SELECT name FROM pragma_index_info(?) ORDER BY seqno').all(index) as { name: string }[]).map((r) => r.name);
    const unique = list.filter((i) => i.unique === 1 && i.origin !== 'pk' && i.partial === 0).map((i) => colsOf(i.name));
    const indexes = list
      .filter((i) => i.origin === 'c')
      .map((i) => ({ name: i.name, columns: colsOf(i.name), unique: i.unique === 1, partial: i.partial === 1 }));
    const fks = db.prepare('SELECT * FROM pragma_foreign_key_list(?) ORDER BY id, seq').all(name) as {
      id: number;
      table: string;
      from: string;
      to: string;
      on_delete: string;
    }[];
    const byId = new Map<number, Shape['foreignKeys'][number]>();
    for (const fk of fks) {
      const entry = byId.get(fk.id) ?? { columns: [], table: fk.table, references: [], onDelete: fk.on_delete };
      entry.columns.push(fk.from);
      entry.references.push(fk.to);
      byId.set(fk.id, entry);
    }
    schema[name] = {
      columns,
      unique: sortBy(unique, (u) => u.join()),
      indexes: sortBy(indexes, (i) => i.name),
      foreignKeys: sortBy([...byId.values()], (f) => f.columns.join()),
    };
  }
  return schema;
}

const PG_TYPES: Record<string, Column['type']> = { text: 'TEXT', integer: 'INTEGER', bigint: 'INTEGER', 'double precision': 'REAL', bytea: 'BLOB' };
const PG_ACTIONS: Record<string, string> = { a: 'NO ACTION', r: 'RESTRICT', c: 'CASCADE', n: 'SET NULL', d: 'SET DEFAULT' };

async function postgresSchema(store: Store): Promise<Schema> {
  const db = store.db;
  const tables = (
    await sql<{ name: string }>`SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_name <> 'schema_version' ORDER BY table_name`.execute(db)
  ).rows;
  const schema: Schema = {};
  for (const { name } of tables) {
    const cols = (
      await sql<{ name: string; type: string; nullable: string; dflt: string | null }>`SELECT column_name AS name, data_type AS type,
        is_nullable AS nullable, column_default AS dflt FROM information_schema.columns
        WHERE table_schema = 'public' AND table_name = ${name} ORDER BY ordinal_position`.execute(db)
    ).rows;
    const pk = (
      await sql<{ name: string }>`SELECT a.attname AS name FROM pg_index i
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
        WHERE i.indrelid = ${name}::regclass AND i.indisprimary`.execute(db)
    ).rows.map((r) => r.name);
    const idx = (
      await sql<{ name: string; unique: boolean; partial: boolean; constraint: boolean; columns: string[] }>`SELECT c.relname AS name,
        i.indisunique AS unique, i.indpred IS NOT NULL AS partial, i.indisprimary AS primary,
        EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid) AS constraint,
        ARRAY(SELECT a.attname FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n)::text[] AS columns
        FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid = ${name}::regclass AND NOT i.indisprimary`.execute(db)
    ).rows;
    const fks = (
      await sql<{ columns: string[]; table: string; references: string[]; action: string }>`SELECT
        ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY AS x(attnum, n)
              JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = x.attnum ORDER BY x.n)::text[] AS columns,
        k.confrelid::regclass::text AS table,
        ARRAY(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY AS x(attnum, n)
              JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = x.attnum ORDER BY x.n)::text[] AS references,
        k.confdeltype AS action
        FROM pg_constraint k WHERE k.conrelid = ${name}::regclass AND k.contype = 'f'`.execute(db)
    ).rows;
    schema[name] = {
      columns: cols.map((c) => ({
        name: c.name,
        type: PG_TYPES[c.type] ?? (c.type as Column['type']),
        notnull: c.nullable === 'NO',
        default: normalDefault(c.dflt),
        pk: pk.includes(c.name),
      })),
      unique: sortBy(
        idx.filter((i) => i.unique && !i.partial).map((i) => i.columns),
        (u) => u.join(),
      ),
      indexes: sortBy(
        idx.filter((i) => !i.constraint).map((i) => ({ name: i.name, columns: i.columns, unique: i.unique, partial: i.partial })),
        (i) => i.name,
      ),
      foreignKeys: sortBy(
        fks.map((f) => ({ columns: f.columns, table: f.table, references: f.references, onDelete: PG_ACTIONS[f.action]! })),
        (f) => f.columns.join(),
      ),
    };
  }
  return schema;
}

describe('the schema of both stores', () => {
  let sqlite: Store;
  let postgres: Store;
  beforeAll(async () => {
    sqlite = await openStore(tempDir());
    postgres = await openStore({ dataDir: tempDir(), databaseUrl: await freshPostgresUrl() });
  });
  afterAll(async () => {
    await sqlite?.close();
    await postgres?.close();
  });

  it('is the same: tables, columns, unique keys, indexes and foreign keys', async () => {
    const fromSqlite = sqliteSchema(sqlite);
    const fromPostgres = await postgresSchema(postgres);
    expect(Object.keys(fromPostgres)).toEqual(Object.keys(fromSqlite));
    for (const table of Object.keys(fromSqlite)) expect(fromPostgres[table], table).toEqual(fromSqlite[table]);
  });
});
