/** @module SQLite's numbered schema migrations, applied in order; `PRAGMA user_version` records the last. */
import m001 from './001-identity-devices-sessions';
import m002 from './002-deployments';
import m003 from './003-fleet';
import m004 from './004-session-token';
import m005 from './005-token-bounds';
import m006 from './006-accounts';
import m007 from './007-port-forward';
import m008 from './008-recordings';
import m009 from './009-idempotency';
import m010 from './010-session-idle';
import m011 from './011-service-status';
import m012 from './012-peers';
import m013 from './013-audit-log';
import m014 from './014-jobs';
import m015 from './015-access';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const sqliteMigrations: readonly Migration[] = [
  { version: 1, name: 'identity-devices-sessions', sql: m001 },
  { version: 2, name: 'deployments', sql: m002 },
  { version: 3, name: 'fleet', sql: m003 },
  { version: 4, name: 'session-token', sql: m004 },
  { version: 5, name: 'token-bounds', sql: m005 },
  { version: 6, name: 'accounts', sql: m006 },
  { version: 7, name: 'port-forward', sql: m007 },
  { version: 8, name: 'recordings', sql: m008 },
  { version: 9, name: 'idempotency', sql: m009 },
  { version: 10, name: 'session-idle', sql: m010 },
  { version: 11, name: 'service-status', sql: m011 },
  { version: 12, name: 'peers', sql: m012 },
  { version: 13, name: 'audit-log', sql: m013 },
  { version: 14, name: 'jobs', sql: m014 },
  { version: 15, name: 'access', sql: m015 },
];
