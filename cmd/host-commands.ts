/**
 * @module The commands run on the server host (docs/cli.md): `tether backup`, `tether restore` and
 * `tether admin token` against its data dir, `tether db copy`, and `tether cluster nats-config`. Their modules
 * (SQLite, NATS keys) load only when one runs.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_DATA_DIR } from './server-defaults';

const print = (line: string) => process.stdout.write(`${line}\n`);

/** `--data-dir`, else TETHER_DATA_DIR, else the server's default: the data dir the server uses. */
const dataDirOf = (flag: string | undefined) => resolve(flag ?? (process.env.TETHER_DATA_DIR || DEFAULT_DATA_DIR));

const DATA_DIR_HELP = `the server's data dir (default: TETHER_DATA_DIR, else ${DEFAULT_DATA_DIR})`;

const DB_COPY_HELP = `
The source is read from a snapshot taken with SQLite's online backup (in the temp dir, TMPDIR),
so a server may keep running on it; the source itself is never changed, and a source of an older
schema is brought to this version's in the snapshot. A target holding any row (in tether's tables
or any other table) is refused, exit 1; tether's own migrations create its schema. Every table is
copied in one PostgreSQL transaction, parents first, 1,000 rows a statement: a failure leaves the
target without a row. peers and rate_limit_hits are runtime state and are not copied. Progress is
on stderr; then a row count per table, and a check of every table after the commit: its row count
and a SHA-256 of its rows in key order, compared between source and target (exit 1 on any
difference). Users, passwords, tokens, agent tokens, sessions, audit, services, groups and vehicles
keep working unchanged. docs/cli.md, moving from SQLite to PostgreSQL.
`;

export function registerHostCommands(program: Command): void {
  program
    .command('backup <file>')
    .description("copy the server's database and its session recordings into one FILE (mode 0600), safely while the server runs")
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .option('--force', 'overwrite FILE if it exists')
    .action(async (file: string, o: { dataDir?: string; force?: boolean }) =>
      (await import('./backup')).backup(dataDirOf(o.dataDir), file, o.force === true, print),
    );

  program
    .command('restore <file>')
    .description("make the backup FILE the server's database and recordings (refused while a server runs on it; the old ones are kept beside it)")
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action(async (file: string, o: { dataDir?: string }) => (await import('./backup')).restore(file, dataDirOf(o.dataDir), print));

  program
    .command('db')
    .description('move the database from one store to another')
    .command('copy')
    .description('copy a SQLite database into an empty PostgreSQL database, in one transaction, and verify every table')
    .requiredOption('--from <path>', 'the SQLite database: its tether.db, or the data dir holding it (it may be in use by a running server)')
    .requiredOption('--to <url>', 'the PostgreSQL database, postgres://USER[:PASSWORD]@HOST:PORT/DATABASE; it must be empty')
    .option('--dry-run', 'check both ends and print what would be copied, writing nothing')
    .addHelpText('after', DB_COPY_HELP)
    .action(async (o: { from: string; to: string; dryRun?: boolean }) =>
      (await import('./db-copy')).dbCopy({ from: o.from, to: o.to, dryRun: o.dryRun === true }),
    );

  program
    .command('admin')
    .description('administration on the server host, through its data dir')
    .command('token')
    .description(
      "issue a new administrator token into the server's database (TETHER_DATABASE_URL when set, else the data dir's) and write it to <data dir>/admin.token (works while the server runs)",
    )
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .option('--username <name>', 'the administrator to issue it for', 'admin')
    .option('--out <file>', 'where to write the token (mode 0600; default: <data dir>/admin.token)')
    .action(async (o: { dataDir?: string; username: string; out?: string }) =>
      (await import('./admin-token')).issueAdminToken(dataDirOf(o.dataDir), o.username, o.out, print),
    );

  program
    .command('cluster')
    .description('set up a cluster of nodes (docs/cluster.md)')
    .command('nats-config')
    .description(
      'write a NATS server configuration and one credentials file per node (control.creds, edge-NAME.creds, peer-NAME.creds); run again with a new --edge or --peer to add one',
    )
    .requiredOption('--out <dir>', 'the directory to write them to (created, mode 0700)')
    .option('--edge <name>', 'an edge node (repeatable)', (name: string, all: string[]) => [...all, name], [] as string[])
    .option('--peer <name>', 'a peer: tether server on PostgreSQL, docs/peers.md (repeatable)', (name: string, all: string[]) => [...all, name], [] as string[])
    .option('--listen <host:port>', 'where the NATS server listens', '127.0.0.1:4222')
    .action(async (o: { out: string; edge: string[]; peer: string[]; listen: string }) => {
      const { writeNatsConfig } = await import('../cluster/nats-config');
      const result = await writeNatsConfig({ out: resolve(o.out), edges: o.edge, peers: o.peer, listen: o.listen });
      for (const file of result.created) print(`wrote ${file}`);
      for (const file of result.kept) print(`kept ${file} (it keeps working)`);
      print(`wrote ${result.config}: start the bus with  nats-server -c ${result.config}`);
      print(
        'give each node its own file: TETHER_NATS_CREDS=<dir>/control.creds on tether server, <dir>/edge-NAME.creds on each tether broker, ' +
          '<dir>/peer-NAME.creds on each peer (tether server with TETHER_DATABASE_URL)',
      );
    });
}
