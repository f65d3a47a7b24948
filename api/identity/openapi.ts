/** @module The OpenAPI operations of password logins, users and tokens (./routes.ts). */
import { z } from 'zod';
import {
  issuedToken,
  loginBody,
  me,
  newUserBody,
  passwordBody,
  passwordSet,
  token,
  tokenBody,
  tokenListQuery,
  tokenRevoked,
  user,
  userChangeBody,
  userDeleted,
} from '../../shared/api/identity';
import { auditOperations } from '../audit/openapi';
import { listBody, okBody } from '../openapi/envelopes';
import type { OperationSpec } from '../openapi/operation';

const userBody = okBody('UserResponse', user);
const createdUser = okBody('CreatedUserResponse', user, 201);
const login = okBody('LoginResponse', issuedToken);
const issued = okBody('IssuedTokenResponse', issuedToken, 201);
const username = { username: 'the user’s name' };

export const identityOperations: OperationSpec[] = [
  {
    method: 'post',
    path: '/v1/auth/token',
    operationId: 'login',
    tag: 'identity',
    summary: 'Exchange a password for a token',
    description: 'A token of 8 hours, scope `*`, no tenants. 10 failed attempts per username per minute, then 429.',
    auth: 'public',
    body: { schema: loginBody },
    responses: { 200: { description: 'the new token', json: login } },
    errors: {
      400: 'malformed body',
      401: 'unknown user or wrong password, or the account is disabled',
      429: 'too many failed logins for this username',
      503: 'the database did not answer (peers on PostgreSQL, docs/peers.md): retry after Retry-After',
    },
  },
  {
    method: 'get',
    path: '/v1/me',
    operationId: 'getMe',
    tag: 'identity',
    summary: 'The token making the request and its user',
    auth: 'bearer',
    responses: { 200: { description: 'the caller', json: okBody('MeResponse', me) } },
    errors: {},
  },
  {
    method: 'post',
    path: '/v1/users',
    operationId: 'createUser',
    tag: 'identity',
    summary: 'Create a user',
    description: 'Administrator, scope `identity:write`.',
    auth: 'bearer',
    idempotent: true,
    body: { schema: newUserBody },
    responses: { 201: { description: 'the user', json: createdUser } },
    errors: { 400: 'malformed body, or a reserved name', 403: 'role or scope missing', 409: 'the user exists, or existed (a deleted user’s name stays taken)' },
  },
  {
    method: 'get',
    path: '/v1/users',
    operationId: 'listUsers',
    tag: 'identity',
    summary: 'Every user but deleted ones',
    description: 'Administrator, scope `identity:read`. Not paged.',
    auth: 'bearer',
    responses: { 200: { description: 'the users', json: okBody('UsersResponse', z.array(user)) } },
    errors: { 403: 'role or scope missing' },
  },
  {
    method: 'patch',
    path: '/v1/users/{username}',
    operationId: 'updateUser',
    tag: 'identity',
    summary: 'Change a user’s role or disabled flag',
    description:
      'Administrator, scope `identity:write`. Give `role`, `disabled` or both. Disabling revokes every token of the user at once (its sessions close, ' +
      'its streams close with 4401); enabling brings none back: the user logs in again.',
    auth: 'bearer',
    params: username,
    body: { schema: userChangeBody },
    responses: { 200: { description: 'the user', json: userBody } },
    errors: {
      400: 'malformed body',
      403: 'role or scope missing',
      404: 'no such user',
      409: 'no enabled administrator would be left, or you disable yourself',
    },
  },
  {
    method: 'delete',
    path: '/v1/users/{username}',
    operationId: 'deleteUser',
    tag: 'identity',
    summary: 'Delete a user, revoking its tokens',
    description: 'Administrator, scope `identity:write`. The name stays taken.',
    auth: 'bearer',
    params: username,
    responses: { 200: { description: 'deleted', json: okBody('UserDeletedResponse', userDeleted) } },
    errors: { 403: 'role or scope missing', 404: 'no such user', 409: 'the last enabled administrator, or yourself' },
  },
  {
    method: 'put',
    path: '/v1/users/{username}/password',
    operationId: 'setPassword',
    tag: 'identity',
    summary: 'Set a user’s password',
    description:
      'Your own with `current_password` (no scope needed); anyone’s as an administrator with `identity:write`. ' +
      'Every token of the user is revoked (its sessions close), but for your own password the token making the request.',
    auth: 'bearer',
    params: username,
    body: { schema: passwordBody },
    responses: { 200: { description: 'the password is set', json: okBody('PasswordSetResponse', passwordSet) } },
    errors: {
      400: 'malformed body, or your own password without current_password',
      403: 'a wrong current_password, or another user’s password without the role or scope',
      404: 'no such user',
      429: 'too many failed password checks for this user',
    },
  },
  {
    method: 'post',
    path: '/v1/tokens',
    operationId: 'issueToken',
    tag: 'identity',
    summary: 'Issue a token for a user',
    description: 'Administrator, scope `identity:write`. Never broader than the token that issues it.',
    auth: 'bearer',
    idempotent: true,
    body: { schema: tokenBody },
    responses: { 201: { description: 'the token, shown this once', json: issued } },
    errors: {
      400: 'malformed body, or a lifetime longer than a human’s token may live',
      403: 'role or scope missing, or a token broader than its issuer',
      404: 'no such user',
      409: 'the user is disabled',
    },
  },
  {
    method: 'get',
    path: '/v1/tokens',
    operationId: 'listTokens',
    tag: 'identity',
    summary: 'Tokens, newest first',
    description: 'Your own user’s; `all=true` or another `username` needs an administrator with `identity:read`.',
    auth: 'bearer',
    query: tokenListQuery,
    responses: { 200: { description: 'a page of tokens', json: listBody('TokenListResponse', token) } },
    errors: { 400: 'an unknown or malformed query parameter', 403: 'another user’s tokens without the role or scope' },
  },
  {
    method: 'delete',
    path: '/v1/tokens/{tokenId}',
    operationId: 'revokeToken',
    tag: 'identity',
    summary: 'Revoke a token',
    description: 'Your own user’s, or (administrators with `identity:write`) anyone’s. Revoking twice is no error.',
    auth: 'bearer',
    params: { tokenId: 'the token’s id (tok_…)' },
    responses: { 200: { description: 'revoked', json: okBody('TokenRevokedResponse', tokenRevoked) } },
    errors: { 403: 'another user’s token without the scope', 404: 'no such token, or another user’s for a non-administrator' },
  },
  // The audit log records what these operations change; its one operation is described beside its routes.
  ...auditOperations,
];
