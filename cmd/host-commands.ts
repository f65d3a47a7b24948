/**
 * @module The commands run on the server host against its data dir (docs/cli.md): `tether backup`,
 * `tether restore` and `tether admin token`. Their modules (SQLite) load only when one runs.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_DATA_DIR } from './server-defaults';

const print = (line: string) => process.stdout.write(`${line}\n`);

/** `--data-dir`, else TETHER_DATA_DIR, else the server's default: the data dir the server uses. */
const dataDirOf = (flag: string | undefined) => resolve(flag ?? (process.env.TETHER_DATA_DIR || DEFAULT_DATA_DIR));

const DATA_DIR_HELP = `the server's data dir (default: TETHER_DATA_DIR, else ${DEFAULT_DATA_DIR})`;

export function registerHostCommands(program: Command): void {
  program
    .command('backup <file>')
    .description('copy the server\'s database to FILE (mode 0600), safely while the server runs')
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .option('--force', 'overwrite FILE if it exists')
    .action(async (file: string, o: { dataDir?: string; force?: boolean }) =>
      (await import('./backup')).backup(dataDirOf(o.dataDir), file, o.force === true, print),
    );

  program
    .command('restore <file>')
    .description('make the backup FILE the server\'s database (refused while a server runs on it; the old one is kept beside it)')
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .action(async (file: string, o: { dataDir?: string }) => (await import('./backup')).restore(file, dataDirOf(o.dataDir), print));

  program
    .command('admin')
    .description('administration on the server host, through its data dir')
    .command('token')
    .description('issue a new administrator token into the database and write it to <data dir>/admin.token (works while the server runs)')
    .option('--data-dir <dir>', DATA_DIR_HELP)
    .option('--username <name>', 'the administrator to issue it for', 'admin')
    .option('--out <file>', 'where to write the token (mode 0600; default: <data dir>/admin.token)')
    .action(async (o: { dataDir?: string; username: string; out?: string }) =>
      (await import('./admin-token')).issueAdminToken(dataDirOf(o.dataDir), o.username, o.out, print),
    );
}
