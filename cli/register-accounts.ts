/**
 * @module The client commands about who you are and who may come in (docs/cli.md): `login`,
 * `logout`, `token` (print, list, revoke), `user` (the server's accounts) and `audit` (who
 * changed what).
 */
import { Command, InvalidArgumentError, Option } from 'commander';
import type { Context } from './context';

// Each command's module loads only when that command runs.
const commands = {
  audit: () => import('./commands/audit'),
  login: () => import('./commands/login'),
  logout: () => import('./commands/logout'),
  tokens: () => import('./commands/tokens'),
  user: () => import('./commands/user'),
};

const ROLES = ['developer', 'platform-engineer', 'administrator', 'none'];
const jsonOption = () => new Option('--json', 'print the answer as JSON');
const yesOption = () => new Option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)');

const PASSWD_HELP = `
Your own password (no NAME, or your own name) needs your current one, unless you are an
administrator; on a terminal both are asked for, the new one twice. With --password-stdin,
standard input holds the current password on the first line (when it is needed) and the new
one on the next. An administrator sets anyone's: tether user passwd ann --password-stdin

Every token of the user is revoked and the sessions they opened close; for your own password,
the token in use is kept (you stay logged in here, nowhere else).
`;

const AUDIT_HELP = `
Without --sessions: logins (failed ones too), users, tokens and devices, as recorded by the
server (administrators). --event takes an event or a family ending in "." (user.); --target an
id (ann, tok_..., cam-7) or KIND:ID (user:ann). WHEN is a date-time (2026-11-26T09:00:00Z,
2026-11-26) or a span ago (90s, 30m, 12h, 7d).

Examples:
  tether audit --event user. --since 7d        every change to users this week
  tether audit --event login.failed            failed logins, folded per user and address a minute
  tether audit --target cam-7                  what happened to device cam-7
  tether audit --sessions --device cam-7       sessions opened and closed on it
`;

function limit(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 200) throw new InvalidArgumentError('--limit must be a whole number from 1 to 200');
  return n;
}

function registerUserCommands(program: Command, ctx: () => Context): void {
  const user = program.command('user').description("the server's accounts (administrators; passwd: your own too)");
  user
    .command('list')
    .description('every user, with role, kind and whether it is disabled')
    .addOption(jsonOption())
    .action(async (o) => (await commands.user()).userList(ctx(), o));
  user
    .command('add <name>')
    .description('add a user (no role unless --role; a person without --password-stdin has no password yet)')
    .addOption(new Option('--role <role>', 'what the user may do').choices(ROLES))
    .option('--service', 'a service account (for automation: its tokens may never expire)')
    .option('--password-stdin', 'read its password from standard input (its trailing newline is dropped)')
    .addOption(jsonOption())
    .action(async (name, o) => (await commands.user()).userAdd(ctx(), name, o));
  user
    .command('disable <name>')
    .description('suspend a user: its tokens are revoked, its sessions close, it cannot log in (enable lets it log in again)')
    .addOption(jsonOption())
    .action(async (name, o) => (await commands.user()).userSetDisabled(ctx(), name, true, o));
  user
    .command('enable <name>')
    .description('let a disabled user log in again (its old tokens stay revoked)')
    .addOption(jsonOption())
    .action(async (name, o) => (await commands.user()).userSetDisabled(ctx(), name, false, o));
  user
    .command('rm <name>')
    .description('delete a user, revoke its tokens and close its sessions (its name stays taken); asks first')
    .addOption(yesOption())
    .addOption(jsonOption())
    .action(async (name, o) => (await commands.user()).userRemove(ctx(), name, o));
  user
    .command('passwd [name]')
    .description("set your password, or (administrators) anyone's")
    .option('--password-stdin', 'read the password(s) from standard input, one a line')
    .option('--revoke-tokens', 'no longer needed: the other tokens are always revoked')
    .addOption(jsonOption())
    .addHelpText('after', PASSWD_HELP)
    .action(async (name, o) => (await commands.user()).userPasswd(ctx(), name, o));
}

/** Adds `login`, `logout`, `token …` and `user …`. */
export function registerAccountCommands(program: Command, ctx: () => Context): void {
  program
    .command('login')
    .description('get a user token (8 hours) and store it in $XDG_CONFIG_HOME/tether/config.json')
    .option('--server <url>', 'the tether server, e.g. http://127.0.0.1:8080')
    .option('--username <name>', 'your username')
    .option('--password-stdin', 'read the password from standard input (its trailing newline is dropped)')
    .action(async (o) => (await commands.login()).login(ctx(), o));

  program
    .command('logout')
    .description('revoke the stored token on its server and forget it (forgotten even when the server cannot be reached)')
    .action(async () => (await commands.logout()).logout(ctx()));

  const token = program
    .command('token')
    .description('print the token in use (TETHER_TOKEN, else the stored one); list or revoke tokens')
    .action(async () => (await commands.login()).token(ctx()));
  token
    .command('list')
    .description("your user's tokens (never the tokens themselves); --all: every user's (administrators)")
    .option('--all', "every user's tokens")
    .addOption(new Option('--status <status>', 'which ones').choices(['active', 'revoked', 'expired', 'all']).default('active'))
    .addOption(jsonOption())
    .action(async (o) => (await commands.tokens()).tokenList(ctx(), o));
  token
    .command('revoke <token-id>')
    .description("revoke a token of yours, or (administrators) anyone's: it answers 401 from then on")
    .addOption(jsonOption())
    .action(async (id, o) => (await commands.tokens()).tokenRevoke(ctx(), id, o));

  registerUserCommands(program, ctx);

  program
    .command('audit')
    .description('who changed what: logins, users, tokens, devices (administrators); --sessions: the remote-access audit')
    .option('--sessions', 'the remote-access audit instead: sessions opened, closed, joined, recordings viewed')
    .option('--event <event>', 'only this event, or a family ending in "." (user.)')
    .option('--actor <name>', 'only what this user did (system: the platform)')
    .option('--target <id>', 'only what happened to this: an id, or KIND:ID (user:ann)')
    .option('--since <when>', 'only events at or after WHEN')
    .option('--until <when>', 'only events before WHEN')
    .option('--session <id>', 'with --sessions: only this session')
    .option('--device <id>', 'with --sessions: only this device')
    .option('--limit <n>', 'how many, newest first (1 to 200; default 50)', limit)
    .addOption(jsonOption())
    .addHelpText('after', AUDIT_HELP)
    .action(async (o) => (await commands.audit()).audit(ctx(), o));
}
