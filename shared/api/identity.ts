/**
 * @module Users, tokens, `GET /v1/me` and password logins over HTTP (docs/http-api.md, users and
 * tokens): roles and scopes, what each request takes and what each answers.
 */
import { z } from 'zod';
import type { ErrorCode } from './errors';
import { named, pagingParams, timestamp } from './common';

/** Roles, lowest first. */
export const ROLES = ['developer', 'platform-engineer', 'administrator'] as const;
export const roleSchema = z.enum(ROLES);
export type Role = z.infer<typeof roleSchema>;

/** The scope catalogue (README "Scopes"). `*` is every scope. */
export const SCOPES = [
  '*',
  'sessions:read',
  'sessions:write',
  'devices:read',
  'devices:write',
  'deployments:read',
  'deployments:write',
  'fleet:read',
  'fleet:write',
  'identity:read',
  'identity:write',
  'jobs:read',
  'jobs:write',
] as const;
export type ScopeName = (typeof SCOPES)[number];

/** Service-account tokens may be given a lifetime up to ten years, or none at all. */
export const SERVICE_TOKEN_MAX_TTL_S = 10 * 365 * 24 * 3600;

/** The codes these operations answer with besides those every operation may (docs/http-api.md, errors). */
export const IDENTITY_ERRORS = ['unauthorized', 'forbidden', 'not_found', 'conflict', 'rate_limited'] as const satisfies readonly ErrorCode[];

// Requests

export const usernameSchema = z
  .string()
  .min(1)
  .max(254)
  .regex(/^[A-Za-z0-9._@+-]+$/, 'may hold only letters, digits and . _ @ + -');

const passwordSchema = z.string().min(8, 'must be at least 8 characters').max(1024);

export const newUserBody = z.strictObject({
  username: usernameSchema,
  role: roleSchema.nullable().optional(),
  kind: z.enum(['human', 'service']).optional(),
  password: passwordSchema.optional(),
});

export const userChangeBody = z
  .strictObject({
    role: roleSchema.nullable().optional(),
    disabled: z.boolean().optional(),
  })
  .refine((b) => b.role !== undefined || b.disabled !== undefined, 'give role, disabled or both');

export const passwordBody = z.strictObject({
  password: passwordSchema,
  current_password: z.string().min(1).max(1024).optional(),
  /** Accepted for older clients: a changed password always revokes the user's other tokens now. */
  revoke_tokens: z
    .literal(true, { error: 'tokens are always revoked when a password changes; leave revoke_tokens out' })
    .optional()
    .describe('deprecated: always true'),
});

export const tokenListQuery = z
  .strictObject({
    ...pagingParams(200, 50),
    all: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .optional(),
    username: usernameSchema.optional(),
    status: z.enum(['active', 'revoked', 'expired', 'all']).default('active'),
  })
  .refine((q) => !(q.all === true && q.username !== undefined), { path: ['all'], message: 'give all=true or username, not both' });

export const loginBody = z.strictObject({
  username: z.string().min(1).max(254),
  password: z.string().min(1).max(1024),
});

const tenantSchema = z.union([z.literal('*'), z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 of [A-Za-z0-9._-] or *')]);

export const tokenBody = z.strictObject({
  username: usernameSchema,
  ttl_seconds: z.number().int().min(1).max(SERVICE_TOKEN_MAX_TTL_S).optional(),
  scopes: z.array(z.enum(SCOPES)).max(32).optional(),
  tenants: z.array(tenantSchema).max(1000).optional(),
});

// Responses

export const user = named(
  'User',
  z.strictObject({
    username: z.string(),
    role: roleSchema.nullable(),
    kind: z.enum(['human', 'service']),
    disabled: z.boolean(),
    created_at: timestamp,
  }),
);
export type User = z.infer<typeof user>;

export const issuedToken = named(
  'IssuedToken',
  z.strictObject({
    token: z.string().describe('the secret, shown this once'),
    token_id: z.string(),
    expires_at: timestamp.nullable().describe('null: never'),
  }),
);
export type IssuedToken = z.infer<typeof issuedToken>;

export const token = named(
  'Token',
  z.strictObject({
    token_id: z.string(),
    username: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    tenants: z.array(z.string()),
    created_at: timestamp,
    expires_at: timestamp.nullable(),
    revoked_at: timestamp.nullable(),
    status: z.enum(['active', 'revoked', 'expired']).describe('as of the request: whether it works (a disabled or deleted user has no active token)'),
    current: z.boolean().describe('true for the token making the request'),
  }),
);
export type Token = z.infer<typeof token>;

export const me = named(
  'Me',
  z.strictObject({
    username: z.string(),
    role: roleSchema.nullable(),
    kind: z.enum(['human', 'service']),
    scopes: z.array(z.enum(SCOPES)),
    tenants: z.array(z.string()),
    token_id: z.string(),
    expires_at: timestamp.nullable(),
  }),
);
export type Me = z.infer<typeof me>;

export const userDeleted = z.strictObject({ username: z.string(), deleted: z.literal(true) });
export type UserDeleted = z.infer<typeof userDeleted>;

export const passwordSet = z.strictObject({ username: z.string(), tokens_revoked: z.int().min(0) });
export type PasswordSet = z.infer<typeof passwordSet>;

export const tokenRevoked = z.strictObject({ token_id: z.string(), revoked: z.literal(true) });
export type TokenRevoked = z.infer<typeof tokenRevoked>;
