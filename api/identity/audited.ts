/**
 * @module The identity changes that come with an audit event (docs/http-api.md, audit log):
 * creating users, password logins, issuing tokens, registering, deleting and re-keying devices.
 * Each change and its event commit in one transaction (api/audit/recorder.ts); a failed login,
 * which changes nothing, is recorded alone and folded with its repeats (api/audit/failed-logins.ts).
 */
import { audited, eventsOf, recordAudit, type AuditedRepos, type AuditRecord, type AuditSource } from '../audit/recorder';
import { recordFailedLogin } from '../audit/failed-logins';
import { ApiError } from '../errors';
import type { Store } from '../store/index';
import type { Principal } from '../store/tokens';
import type { User } from '../store/users';
import { isUniqueViolation } from '../store/index';
import { createIdentity, disabledAccount, type Identity, type IssuedToken, type NewUser, type TokenRequest } from './identity';

export function createAuditedIdentity(store: Store, now: () => number) {
  const identity = createIdentity(store, now);
  const iso = () => new Date(now()).toISOString();
  /** Runs `change` on one transaction's identity, recording what it returns beside its result. */
  const changing = <T>(source: AuditSource, change: (tx: Identity, repos: AuditedRepos) => Promise<{ result: T; records: AuditRecord[] }>) =>
    audited(store, async (tx) => {
      const { result, records } = await change(createIdentity(tx, now), tx);
      await recordAudit(tx.db, eventsOf(source, iso(), records));
      return result;
    });

  return {
    async createUser(input: NewUser, source: AuditSource): Promise<User> {
      // Hashed before the transaction: it holds the database only for the database's work.
      const { user, hash } = await identity.prepareUser(input);
      const details = { role: user.role, kind: user.kind, password: hash !== null };
      try {
        return await changing(source, async (tx) => {
          await tx.insertUser(user, hash);
          return { result: user, records: [{ event: 'user.created', target: { kind: 'user', id: user.username }, details }] };
        });
      } catch (err) {
        // Asked after the transaction: on PostgreSQL a failed statement ends the transaction's use.
        if (isUniqueViolation(err)) throw await identity.userExists(user.username);
        throw err;
      }
    },

    /** A password login; a failure (401) is audited as `login.failed` with the username tried, never the password. */
    async login(username: string, password: string, source: Omit<AuditSource, 'actor'>): Promise<IssuedToken> {
      try {
        await identity.authenticate(username, password);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'unauthorized') {
          const reason = err.message === disabledAccount(username) ? 'account_disabled' : 'unknown_user_or_wrong_password';
          await recordFailedLogin(store.db, source, username, reason, now());
        }
        throw err;
      }
      return changing({ ...source, actor: username }, async (tx) => {
        const issued = await tx.loginToken(username);
        const details = { token_id: issued.token_id, expires_at: issued.expires_at };
        return { result: issued, records: [{ event: 'login.succeeded', target: { kind: 'user', id: username }, details }] };
      });
    },

    async issueToken(username: string, req: TokenRequest, issuer: Principal | undefined, source: AuditSource): Promise<IssuedToken> {
      return changing(source, async (tx, repos) => {
        const issued = await tx.issueToken(username, req, issuer);
        const { scopes, tenants } = (await repos.tokens.get(issued.token_id))!;
        const details = { username, scopes, tenants, expires_at: issued.expires_at };
        return { result: issued, records: [{ event: 'token.created', target: { kind: 'token', id: issued.token_id }, details }] };
      });
    },

    async createDevice(deviceId: string, labels: Record<string, string>, source: AuditSource) {
      return changing(source, async (tx) => {
        const created = await tx.createDevice(deviceId, labels);
        return { result: created, records: [{ event: 'device.created', target: { kind: 'device', id: deviceId }, details: { labels } }] };
      });
    },

    /** A new agent token for a device; undefined: no such device (nothing recorded). */
    async rotateAgentToken(deviceId: string, source: AuditSource) {
      return changing(source, async (tx) => {
        const rotated = await tx.rotateAgentToken(deviceId);
        return { result: rotated, records: rotated ? [{ event: 'device.token_rotated', target: { kind: 'device', id: deviceId } }] : [] };
      });
    },

    /** Deletes a device's record; false if it was gone already (nothing recorded). */
    async deleteDevice(deviceId: string, sessionsClosed: number, source: AuditSource): Promise<boolean> {
      return audited(store, async (tx) => {
        const deleted = await tx.devices.delete(deviceId);
        if (deleted) {
          const record: AuditRecord = { event: 'device.deleted', target: { kind: 'device', id: deviceId }, details: { sessions_closed: sessionsClosed } };
          await recordAudit(tx.db, eventsOf(source, iso(), [record]));
        }
        return deleted;
      });
    },
  };
}
export type AuditedIdentity = ReturnType<typeof createAuditedIdentity>;
