/**
 * @module PostgreSQL's numbered schema migrations, applied in order; the table `schema_version`
 * records the last. They begin at 11, the schema SQLite reached through its own migrations 1 to
 * 11, and from there each version means the same schema on both stores.
 */
import type { Migration } from '../sqlite/index';
import m011 from './011-schema';
import m012 from './012-peers';
import m013 from './013-audit-log';
import m014 from './014-jobs';
import m015 from './015-access';

export const postgresMigrations: readonly Migration[] = [
  { version: 11, name: 'schema', sql: m011 },
  { version: 12, name: 'peers', sql: m012 },
  { version: 13, name: 'audit-log', sql: m013 },
  { version: 14, name: 'jobs', sql: m014 },
  { version: 15, name: 'access', sql: m015 },
];
