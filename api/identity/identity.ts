/**
 * @module Users, tokens and device registration: the rules of docs/http-api.md (tokens, roles and scopes) that are more
 * than storage (token lifetimes per kind, password checks, one-time secrets). Changing, disabling
 * and deleting accounts, and revoking tokens, are `./accounts`.
 */
import { newSecret, randomBase32, sha256Hex } from '../../shared/ids';
import { requireWithinIssuer } from '../access';
import { ANONYMOUS_ACTOR } from '../../shared/api/audit';
import { badRequest, conflict, notFound, unauthorized, type ApiError } from '../errors';
import type { Role } from '../roles';
import { isUniqueViolation, type Repos } from '../store/index';
import type { Principal } from '../store/tokens';
import type { User, UserKind, UserRow } from '../store/users';
import { hashPassword, verifyPassword } from './passwords';

/** A user token lives 8 hours ; it is also the most a human's token may live. */
export const USER_TOKEN_TTL_S = 8 * 3600;
/** Service-account tokens may be given a lifetime up to ten years, or none at all. */
export { SERVICE_TOKEN_MAX_TTL_S } from '../../shared/api/identity';
/** Actor of the audit events the platform itself causes (expiry, shutdown, device deletion). */
export const SYSTEM_ACTOR = 'system';
/** What a login of a disabled account is told, once its password checked out. */
export const disabledAccount = (username: string) => `account ${username} is disabled; an administrator can enable it again`;
/** Names no user may take: they are actors of the audit. */
const RESERVED_NAMES: readonly string[] = [SYSTEM_ACTOR, ANONYMOUS_ACTOR];

export const USER_TOKEN_PREFIX = 'tth_';
export const AGENT_TOKEN_PREFIX = 'tdev_';

export interface IssuedToken {
  token: string;
  token_id: string;
  expires_at: string | null;
}

export interface NewUser {
  username: string;
  role?: Role | null | undefined;
  kind?: UserKind | undefined;
  password?: string | undefined;
}

export interface TokenRequest {
  ttl_seconds?: number | undefined;
  scopes?: string[] | undefined;
  tenants?: string[] | undefined;
  /** The raw token to store, for the bootstrap token; otherwise a new random one. */
  token?: string | undefined;
}

/** The repositories identity works on: the store's, or one transaction's. */
export type IdentityRepos = Pick<Repos, 'users' | 'tokens' | 'devices'>;

export function createIdentity(store: IdentityRepos, now: () => number) {
  const iso = (ms: number) => new Date(ms).toISOString();

  async function issue(username: string, expiresAt: number | null, req: TokenRequest): Promise<IssuedToken> {
    const token = req.token ?? newSecret(USER_TOKEN_PREFIX);
    const record = {
      token_id: `tok_${randomBase32(20)}`,
      username,
      scopes: [...new Set(req.scopes ?? [])],
      tenants: [...new Set(req.tenants ?? [])],
      created_at: iso(now()),
      expires_at: expiresAt === null ? null : iso(expiresAt),
    };
    await store.tokens.insert(record, sha256Hex(token));
    return { token, token_id: record.token_id, expires_at: record.expires_at };
  }

  /** The user `input` asks for and its password's hash, checked, before anything is written. */
  async function prepareUser(input: NewUser): Promise<{ user: User; hash: string | null }> {
    if (RESERVED_NAMES.includes(input.username)) throw badRequest(`the username "${input.username}" is reserved`);
    const user: User = {
      username: input.username,
      role: input.role ?? null,
      kind: input.kind ?? 'human',
      disabled: false,
      created_at: iso(now()),
    };
    return { user, hash: input.password === undefined ? null : await hashPassword(input.password) };
  }

  /** Why a user could not be inserted: 409, saying whether the name belonged to a deleted user. */
  async function userExists(username: string): Promise<ApiError> {
    if (await store.users.wasDeleted(username)) {
      return conflict(`user ${username} was deleted; its name stays taken so that no new account sees its sessions and audit`);
    }
    return conflict(`user ${username} already exists`);
  }

  /**
   * The user whose password this is, or 401. Only a caller who knows the password learns that
   * the account is disabled.
   */
  async function authenticate(username: string, password: string): Promise<UserRow> {
    const user = await store.users.get(username);
    const ok = await verifyPassword(password, user?.password_hash);
    if (!user || !ok) throw unauthorized('unknown user or wrong password');
    if (user.disabled) throw unauthorized(disabledAccount(username));
    return user;
  }

  /** A password login's token: 8 hours, every scope (the user's role bounds it), no tenants (fleet tokens are issued by an administrator). */
  const loginToken = (username: string): Promise<IssuedToken> => issue(username, now() + USER_TOKEN_TTL_S * 1000, { scopes: ['*'] });

  return {
    prepareUser,
    userExists,

    /** Inserts a prepared user; a taken name throws the store's unique violation. */
    insertUser: (user: User, hash: string | null): Promise<void> => store.users.insert(user, hash),

    /** Creates a user (without an audit event: api/identity/audited.ts records one). */
    async createUser(input: NewUser): Promise<User> {
      const { user, hash } = await prepareUser(input);
      try {
        await store.users.insert(user, hash);
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        throw await userExists(user.username);
      }
      return user;
    },

    listUsers: (): Promise<User[]> => store.users.list(),

    authenticate,
    loginToken,

    /** Exchanges a password for a user token (`authenticate`, then `loginToken`). */
    async login(username: string, password: string): Promise<IssuedToken> {
      await authenticate(username, password);
      return loginToken(username);
    },

    /**
     * Issues a token for a user, within the lifetime its kind allows and, when `issuer` is a
     * token (not the bootstrap), no broader than it: scopes default to the issuer's, tenants
     * to none, and an unasked-for lifetime ends no later than the issuer's.
     */
    async issueToken(username: string, req: TokenRequest, issuer?: Principal): Promise<IssuedToken> {
      const user = await store.users.get(username);
      if (!user) throw notFound(`no user ${username}`);
      // It would be refused while the account is disabled, and come alive unnoticed when enabled.
      if (user.disabled) throw conflict(`user ${username} is disabled; enable it before issuing it a token`);
      const t = now();
      let expiresAt: number | null;
      if (user.kind === 'human') {
        const ttl = req.ttl_seconds ?? USER_TOKEN_TTL_S;
        if (ttl > USER_TOKEN_TTL_S) {
          throw badRequest(`a human's token lives at most ${USER_TOKEN_TTL_S} s`, [
            { path: 'ttl_seconds', message: `must be at most ${USER_TOKEN_TTL_S} for a human user` },
          ]);
        }
        expiresAt = t + ttl * 1000;
      } else {
        expiresAt = req.ttl_seconds === undefined ? null : t + req.ttl_seconds * 1000;
      }
      if (!issuer) return issue(username, expiresAt, req);
      const issuerEnd = issuer.expires_at === null ? null : Date.parse(issuer.expires_at);
      if (req.ttl_seconds === undefined && issuerEnd !== null) expiresAt = Math.min(expiresAt ?? issuerEnd, issuerEnd);
      const grant = { scopes: req.scopes ?? issuer.scopes, tenants: req.tenants ?? [], expiresAt };
      requireWithinIssuer(issuer, grant);
      return issue(username, expiresAt, { ...req, scopes: grant.scopes, tenants: grant.tenants });
    },

    /** Registers a device and returns its agent token, shown this once only. */
    async createDevice(deviceId: string, labels: Record<string, string>) {
      const agentToken = newSecret(AGENT_TOKEN_PREFIX);
      try {
        await store.devices.insert(deviceId, sha256Hex(agentToken), labels, iso(now()));
      } catch (err) {
        if (isUniqueViolation(err)) throw conflict(`device ${deviceId} already exists`);
        throw err;
      }
      return { device_id: deviceId, agent_status: 'offline' as const, agent_token: agentToken };
    },

    /** A new agent token for a device; the old one stops working. Undefined: no such device. */
    async rotateAgentToken(deviceId: string): Promise<{ device_id: string; agent_token: string } | undefined> {
      const agentToken = newSecret(AGENT_TOKEN_PREFIX);
      if (!(await store.devices.replaceTokenHash(deviceId, sha256Hex(agentToken)))) return undefined;
      return { device_id: deviceId, agent_token: agentToken };
    },

    /** The device an agent token belongs to, if the token is valid. */
    deviceOfAgentToken: async (token: string): Promise<string | undefined> => store.devices.idByTokenHash(sha256Hex(token)),
  };
}
export type Identity = ReturnType<typeof createIdentity>;
