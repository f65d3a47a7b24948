/**
 * Webhooks and their outbox on the store under test: an audit event (remote-access audit or audit
 * log) enqueues one delivery per live subscribed webhook in its own transaction (and none when it
 * rolls back), with the exact body to POST; deliveries are leased to one sender at a time, a lost
 * lease records nothing, an expired one is claimed again; attempts are recorded; a deleted webhook
 * is no longer enqueued to and its pending deliveries end `failed`.
 */
import { describe, expect, it } from 'vitest';
import { recordAudit } from '../../../../api/audit/recorder';
import { appendJobAudit } from '../../../../api/store/audit';
import { atomically } from '../../../../api/store/schema';
import { enqueueDeliveries } from '../../../../api/store/webhook-outbox';
import { createWebhookRepo } from '../../../../api/store/webhooks';
import { storeForEachTest } from '../../../helpers/store';

const T0 = '2026-03-01T10:00:00.000Z';
const at = (s: number) => new Date(Date.parse(T0) + s * 1000).toISOString();
const SECRET = 'a-secret-of-sixteen-chars';

describe('webhooks repository and outbox', () => {
  const store = storeForEachTest();
  const repo = () => createWebhookRepo(store.db);
  const hook = (events: string[], format: 'json' | 'slack' = 'json') =>
    repo().create({ url: 'http://127.0.0.1:9/hook', events, secret: SECRET, format, created_by: 'admin', at: T0 });
  const bodies = async () =>
    (await store.db.selectFrom('webhook_deliveries').select(['webhook_id', 'event', 'body', 'status']).orderBy('webhook_id').execute()).map((r) => ({
      ...r,
      body: JSON.parse(r.body) as Record<string, unknown>,
    }));
  const job = { event: 'job.created' as const, job_id: 'job_1', actor: 'ann', owner: 'ann', reason: null, trace_id: 'trace-1', at: T0 };

  it('enqueues nothing without webhooks, and one delivery per live subscribed webhook with the body to POST', async () => {
    expect(await enqueueDeliveries(store.db, { event: 'job.created', at: T0, data: {} })).toBe(0);
    const json = await hook(['job.created', 'session.opened']);
    const slack = await hook(['job.created'], 'slack');
    await hook(['session.closed']);
    await appendJobAudit(store.db, job);
    const rows = await bodies();
    expect(rows).toHaveLength(2);
    const byHook = new Map(rows.map((r) => [r.webhook_id, r]));
    const j = byHook.get(json.webhook_id)!;
    expect(j.status).toBe('pending');
    expect(Object.keys(j.body)).toEqual(['id', 'event', 'at', 'data']);
    expect(j.body).toMatchObject({ event: 'job.created', at: T0 });
    expect(j.body.id).toMatch(/^whd_[a-z2-7]{20}$/);
    // The audit listing's shape: no owner, no null targets, the job's id.
    expect(j.body.data).toEqual({
      event: 'job.created',
      job_id: 'job_1',
      session_id: null,
      device_id: null,
      protocol: null,
      actor: 'ann',
      reason: null,
      trace_id: 'trace-1',
      at: T0,
    });
    const s = byHook.get(slack.webhook_id)!;
    expect(s.body.text).toBe('[tether] job.created by ann: job job_1');
    expect(s.body.data).toEqual(j.body.data);
  });

  it('enqueues in the event’s transaction: a rollback leaves neither', async () => {
    await hook(['job.created']);
    await expect(
      atomically(store.db, async (tx) => {
        await appendJobAudit(tx, job);
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(await bodies()).toEqual([]);
    expect((await store.audit.list({ limit: 10, offset: 0 })).total).toBe(0);
  });

  it('enqueues audit-log events with their listing fields', async () => {
    await hook(['user.created']);
    await recordAudit(store.db, {
      event: 'user.created',
      actor: 'admin',
      target: { kind: 'user', id: 'bob' },
      details: { role: 'developer' },
      at: T0,
      trace_id: 'trace-2',
      source_ip: '127.0.0.1',
    });
    const [row] = await bodies();
    expect(row!.body.data).toEqual({
      event: 'user.created',
      actor: 'admin',
      target: { kind: 'user', id: 'bob' },
      details: { role: 'developer' },
      outcome: 'success',
      at: T0,
      trace_id: 'trace-2',
      source_ip: '127.0.0.1',
    });
  });

  it('names the request in a Slack line of an access event', async () => {
    await hook(['access_request.created'], 'slack');
    await store.db
      .insertInto('access_requests')
      .values({
        request_id: 'areq_1',
        requester: 'ann',
        device_id: 'cam-7',
        protocols: '["shell"]',
        reason: 'fix <brakes>',
        duration_seconds: 3600,
        status: 'pending',
        created_at: T0,
        expires_at: at(86_400),
        reviewed_by: null,
        review_reason: null,
        reviewed_at: null,
        starts_at: null,
        ends_at: null,
        revoked_by: null,
        revoke_reason: null,
        revoked_at: null,
      })
      .execute();
    await enqueueDeliveries(store.db, {
      event: 'access_request.created',
      at: T0,
      data: { request_id: 'areq_1', device_id: 'cam-7', actor: 'ann', reason: 'fix <brakes>' },
    });
    const [row] = await bodies();
    expect(row!.body.text).toBe('[tether] ann asked for shell on cam-7 for 1h: fix &lt;brakes&gt;');
  });

  it('leases a due delivery to one sender; an expired lease is claimed again, a lost one records nothing', async () => {
    const h = await hook(['job.created']);
    await appendJobAudit(store.db, job);
    expect(await repo().claimDue(at(-1), at(29), 4)).toEqual([]); // not due yet
    const [a, b] = await Promise.all([repo().claimDue(T0, at(30), 4), repo().claimDue(T0, at(30.001), 4)]);
    expect(a!.length + b!.length).toBe(1);
    const claimed = [...a!, ...b!][0]!;
    expect(claimed).toMatchObject({ url: 'http://127.0.0.1:9/hook', secret: SECRET, event: 'job.created', attempts: 0 });
    expect(JSON.parse(claimed.body)).toMatchObject({ id: claimed.delivery_id });
    expect(await repo().claimDue(at(10), at(40), 4)).toEqual([]); // still leased
    const again = await repo().claimDue(at(31), at(61), 4); // its sender died
    expect(again.map((d) => d.delivery_id)).toEqual([claimed.delivery_id]);
    expect(await repo().recordAttempt(claimed.delivery_id, claimed.lease, { kind: 'delivered', status_code: 200, at: at(31) })).toBe(false);
    expect(
      await repo().recordAttempt(claimed.delivery_id, again[0]!.lease, { kind: 'retry', status_code: 500, error: 'HTTP 500', next_attempt_at: at(40) }),
    ).toBe(true);
    let [d] = (await repo().deliveries(h.webhook_id, { limit: 10, offset: 0 })).items;
    expect(d).toMatchObject({ status: 'pending', attempts: 1, last_status_code: 500, last_error: 'HTTP 500', next_attempt_at: at(40), delivered_at: null });
    expect(await repo().claimDue(at(39), at(69), 4)).toEqual([]);
    const third = await repo().claimDue(at(40), at(70), 4);
    expect(await repo().recordAttempt(claimed.delivery_id, third[0]!.lease, { kind: 'delivered', status_code: 204, at: at(41) })).toBe(true);
    [d] = (await repo().deliveries(h.webhook_id, { limit: 10, offset: 0 })).items;
    expect(d).toMatchObject({ status: 'delivered', attempts: 2, last_status_code: 204, last_error: null, next_attempt_at: null, delivered_at: at(41) });
    expect(await repo().claimDue(at(100), at(130), 4)).toEqual([]);
    expect(await repo().pendingCount()).toBe(0);
  });

  it('a released lease is not an attempt; a failure for good ends the delivery', async () => {
    const h = await hook(['job.created']);
    await appendJobAudit(store.db, job);
    let [c] = await repo().claimDue(T0, at(30), 4);
    expect(await repo().recordAttempt(c!.delivery_id, c!.lease, { kind: 'released' })).toBe(true);
    [c] = await repo().claimDue(T0, at(30), 4);
    expect(c!.attempts).toBe(0);
    expect(await repo().recordAttempt(c!.delivery_id, c!.lease, { kind: 'failed', status_code: null, error: 'ECONNREFUSED' })).toBe(true);
    expect((await repo().deliveries(h.webhook_id, { status: 'failed', limit: 10, offset: 0 })).items[0]).toMatchObject({
      attempts: 1,
      last_status_code: null,
      last_error: 'ECONNREFUSED',
    });
    expect(await repo().claimDue(at(100), at(130), 4)).toEqual([]);
  });

  it('deletes a webhook: listed no more, enqueued to no more, its pending deliveries failed, its log kept', async () => {
    const h = await hook(['job.created']);
    const other = await hook(['job.created']);
    await appendJobAudit(store.db, job);
    await appendJobAudit(store.db, { ...job, job_id: 'job_2', at: at(1) });
    expect(await repo().remove(h.webhook_id, at(2))).toBe(true);
    expect(await repo().remove(h.webhook_id, at(3))).toBe(false);
    expect((await repo().list()).map((w) => w.webhook_id)).toEqual([other.webhook_id]);
    expect((await repo().get(h.webhook_id))?.deleted_at).toBe(at(2));
    await appendJobAudit(store.db, { ...job, job_id: 'job_3', at: at(4) });
    const log = await repo().deliveries(h.webhook_id, { limit: 1, offset: 0 });
    expect(log.total).toBe(2);
    expect(log.items[0]).toMatchObject({ status: 'failed', last_error: 'webhook deleted', next_attempt_at: null, created_at: at(1) });
    expect((await repo().deliveries(other.webhook_id, { status: 'pending', limit: 10, offset: 0 })).total).toBe(3);
    expect((await repo().deliveries(h.webhook_id, { status: 'pending', limit: 10, offset: 0 })).total).toBe(0);
  });

  it('prunes, for housekeeping, deliveries that ended before a time; pending ones stay whatever their age', async () => {
    const h = await hook(['job.created']);
    const other = await hook(['job.created']);
    await appendJobAudit(store.db, job);
    await appendJobAudit(store.db, { ...job, job_id: 'job_2', at: at(10) });
    expect(await repo().remove(h.webhook_id, at(20))).toBe(true); // h's two deliveries end failed
    expect(await repo().pruneEnded(at(5))).toBe(1); // h's first only: the second is newer, other's are pending
    expect((await repo().deliveries(h.webhook_id, { limit: 10, offset: 0 })).items.map((d) => d.created_at)).toEqual([at(10)]);
    expect((await repo().deliveries(other.webhook_id, { limit: 10, offset: 0 })).total).toBe(2);
  });
});
