/**
 * Users, tokens and devices (api/identity/identity.ts) on a real store (SQLite, or PostgreSQL):
 * the rules beyond storage. A name that was taken stays taken; a password login gives an 8-hour token and tells a
 * disabled account only to who knows its password; a token's lifetime is bounded by its user's
 * kind and by the token that issues it; secrets are shown once and kept only as digests.
 */
import { describe, expect, it } from 'vitest';
import { createIdentity, SERVICE_TOKEN_MAX_TTL_S, USER_TOKEN_TTL_S } from '../../../../api/identity/identity';
import { hashPassword, verifyPassword } from '../../../../api/identity/passwords';
import { sha256Hex } from '../../../../shared/ids';
import { failure, storeForEachTest } from '../../../helpers/store';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (ms: number) => new Date(ms).toISOString();

/** The error a promise rejects with (fails when it resolves). */
const rejection = (p: Promise<unknown>): Promise<unknown> => failure(() => p);

describe('identity', () => {
  const store = storeForEachTest();
  const identity = () => createIdentity(store, () => T0);
  /** The principal a token resolves to, as authentication sees it. */
  const principal = async (token: string) => (await store.tokens.findByHash(sha256Hex(token)))!;

  describe('users', () => {
    it('keeps "system" for the platform, and a name once taken, even after its user was deleted', async () => {
      const id = identity();
      expect(await rejection(id.createUser({ username: 'system' }))).toMatchObject({ code: 'bad_request', status: 400 });
      await id.createUser({ username: 'ann', role: 'developer' });
      expect(await rejection(id.createUser({ username: 'ann' }))).toMatchObject({ code: 'conflict', message: 'user ann already exists' });
      await store.users.markDeleted('ann', at(T0));
      expect(await rejection(id.createUser({ username: 'ann' }))).toMatchObject({ code: 'conflict', message: expect.stringContaining('was deleted') });
    });

    it('stores a password only as a salted scrypt hash', async () => {
      await identity().createUser({ username: 'ann', password: 'correct horse' });
      const hash = (await store.users.get('ann'))!.password_hash!;
      expect(hash).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
      expect(hash).not.toContain('correct horse');
      expect(hash).not.toBe(await hashPassword('correct horse')); // salted
      expect(await verifyPassword('correct horse', hash)).toBe(true);
      expect(await verifyPassword('Correct horse', hash)).toBe(false);
      expect(await verifyPassword('correct horse', null)).toBe(false); // no password set: nothing matches
      expect(await verifyPassword('correct horse', 'md5$abc')).toBe(false);
    });
  });

  describe('login', () => {
    it('gives an 8-hour token with every scope (the role bounds it) and no tenants, kept only as its digest', async () => {
      const id = identity();
      await id.createUser({ username: 'ann', role: 'developer', password: 'correct horse' });
      const issued = await id.login('ann', 'correct horse');
      expect(issued.token).toMatch(/^tth_/);
      expect(issued.expires_at).toBe(at(T0 + USER_TOKEN_TTL_S * 1000));
      expect(await principal(issued.token)).toMatchObject({ username: 'ann', role: 'developer', scopes: ['*'], tenants: [], token_id: issued.token_id });
      expect(await store.tokens.findByHash(issued.token)).toBeUndefined();
    });

    it('answers a wrong password and an unknown user alike, and says an account is disabled only to who knows its password', async () => {
      const id = identity();
      await id.createUser({ username: 'ann', role: 'developer', password: 'correct horse' });
      const wrong = await rejection(id.login('ann', 'battery staple'));
      const unknown = await rejection(id.login('nobody', 'correct horse'));
      expect(wrong).toMatchObject({ code: 'unauthorized', status: 401 });
      expect((unknown as Error).message).toBe((wrong as Error).message);
      await store.users.update('ann', { disabled: true });
      expect(((await rejection(id.login('ann', 'battery staple'))) as Error).message).toBe((wrong as Error).message);
      expect(await rejection(id.login('ann', 'correct horse'))).toMatchObject({ code: 'unauthorized', message: expect.stringContaining('ann is disabled') });
    });
  });

  describe('issuing tokens', () => {
    it("bounds a human's token to 8 hours; a service account's may live up to ten years, or forever", async () => {
      const id = identity();
      await id.createUser({ username: 'ann', role: 'developer', kind: 'human' });
      await id.createUser({ username: 'ci', role: 'developer', kind: 'service' });
      expect((await id.issueToken('ann', {})).expires_at).toBe(at(T0 + USER_TOKEN_TTL_S * 1000));
      expect(await rejection(id.issueToken('ann', { ttl_seconds: USER_TOKEN_TTL_S + 1 }))).toMatchObject({
        code: 'bad_request',
        details: [{ path: 'ttl_seconds' }],
      });
      expect((await id.issueToken('ci', {})).expires_at).toBeNull();
      expect((await id.issueToken('ci', { ttl_seconds: SERVICE_TOKEN_MAX_TTL_S })).expires_at).toBe(at(T0 + SERVICE_TOKEN_MAX_TTL_S * 1000));
    });

    it('issues nothing to a user that does not exist or is disabled', async () => {
      const id = identity();
      expect(await rejection(id.issueToken('nobody', {}))).toMatchObject({ code: 'not_found', status: 404 });
      await id.createUser({ username: 'ci', kind: 'service' });
      await store.users.update('ci', { disabled: true });
      expect(await rejection(id.issueToken('ci', {}))).toMatchObject({ code: 'conflict', status: 409 });
    });

    it('issues nothing broader than the issuing token: its scopes by default, no tenants, no later end', async () => {
      const id = identity();
      await id.createUser({ username: 'ci', role: 'administrator', kind: 'service' });
      await id.createUser({ username: 'bot', role: 'developer', kind: 'service' });
      const issuer = await principal((await id.issueToken('ci', { ttl_seconds: 3600, scopes: ['devices:read', 'sessions:write'], tenants: ['acme'] })).token);

      const narrow = await id.issueToken('bot', {}, issuer);
      expect(await principal(narrow.token)).toMatchObject({ scopes: ['devices:read', 'sessions:write'], tenants: [] });
      expect(narrow.expires_at).toBe(issuer.expires_at); // a service token asked for no end: it ends with its issuer

      expect(await rejection(id.issueToken('bot', { scopes: ['*'] }, issuer))).toMatchObject({ code: 'forbidden' });
      expect(await rejection(id.issueToken('bot', { scopes: ['identity:write'] }, issuer))).toMatchObject({ code: 'forbidden' });
      expect(await rejection(id.issueToken('bot', { tenants: ['globex'] }, issuer))).toMatchObject({ code: 'forbidden' });
      expect(await rejection(id.issueToken('bot', { ttl_seconds: 7200 }, issuer))).toMatchObject({ code: 'forbidden' });
      expect(await principal((await id.issueToken('bot', { tenants: ['acme'], ttl_seconds: 60 }, issuer)).token)).toMatchObject({ tenants: ['acme'] });
    });
  });

  describe('devices', () => {
    it('shows an agent token once, keeps its digest, and a new one replaces it at once', async () => {
      const id = identity();
      const created = await id.createDevice('cam-7', { site: 'lab' });
      expect(created).toEqual({ device_id: 'cam-7', agent_status: 'offline', agent_token: expect.stringMatching(/^tdev_/) });
      expect(await id.deviceOfAgentToken(created.agent_token)).toBe('cam-7');
      expect(await store.devices.tokenHash('cam-7')).toBe(sha256Hex(created.agent_token));
      expect(await rejection(id.createDevice('cam-7', {}))).toMatchObject({ code: 'conflict', status: 409 });

      const rotated = (await id.rotateAgentToken('cam-7'))!;
      expect(rotated.agent_token).not.toBe(created.agent_token);
      expect(await id.deviceOfAgentToken(created.agent_token)).toBeUndefined();
      expect(await id.deviceOfAgentToken(rotated.agent_token)).toBe('cam-7');
      expect(await id.rotateAgentToken('nowhere')).toBeUndefined();
      expect(await id.deviceOfAgentToken('tdev_guess')).toBeUndefined();
    });
  });
});
