/**
 * @module Failed password logins in the audit log, bounded. Anyone can send them, so each one
 * cannot be a row of its own: repeats of one username from one address (for one reason) within a
 * minute fold into one row (its `count`), and beyond FAILED_LOGIN_ROWS_PER_MINUTE rows a minute
 * every further failure folds into one row for the minute whose target is `*`. The log grows by
 * at most that many rows a minute however many logins fail; the failed-login limit per username
 * (api/identity/routes.ts) and the bound on password hashes in flight limit how many are checked.
 */
import { ANONYMOUS_ACTOR } from '../../shared/api/audit';
import { createAuditLogRepo } from '../store/audit-log';
import { atomically, type Executor } from '../store/schema';
import { recordAudit, type AuditSource } from './recorder';

/** Rows of failed logins written per minute at most (plus one that folds the rest). */
export const FAILED_LOGIN_ROWS_PER_MINUTE = 30;
const WINDOW_MS = 60_000;

/** Why a password login failed: the audit says it, the caller is never told more than 401. */
export type LoginFailure = 'unknown_user_or_wrong_password' | 'account_disabled';

/** Records one failed login of `username` (as tried: it may name nobody) from `source`. */
export async function recordFailedLogin(db: Executor, source: Omit<AuditSource, 'actor'>, username: string, reason: LoginFailure, now: number): Promise<void> {
  const at = new Date(now).toISOString();
  const since = new Date(now - WINDOW_MS).toISOString();
  await atomically(db, async (tx) => {
    const log = createAuditLogRepo(tx);
    const key = { event: 'login.failed' as const, source_ip: source.source_ip, since };
    if (await log.repeat({ ...key, target_id: username, details: { reason } }, at)) return;
    const flood = (await log.rowsSince('login.failed', since)) >= FAILED_LOGIN_ROWS_PER_MINUTE;
    const target = flood ? '*' : username;
    const details = flood ? { reason: 'flood', note: `more than ${FAILED_LOGIN_ROWS_PER_MINUTE} rows of failed logins this minute` } : { reason };
    // The flood row folds every address together: one row a minute, whatever their number.
    const flooded = { ...source, source_ip: flood ? null : source.source_ip };
    if (flood && (await log.repeat({ ...key, source_ip: null, target_id: target, details }, at))) return;
    await recordAudit(tx, { ...flooded, actor: ANONYMOUS_ACTOR, at, event: 'login.failed', target: { kind: 'user', id: target }, details, outcome: 'failure' });
  });
}
