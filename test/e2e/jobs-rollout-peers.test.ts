/**
 * Jobs across two `tether server` peers on one PostgreSQL database (docs/peers.md, docs/jobs.md):
 * each peer starts executions on its own agents, and the pace and the in-flight bound are the
 * job's, shared through the database: both peers start some, at one a second together, never
 * more than `max_in_flight` run at once, and every execution runs once. PostgreSQL only (peers
 * need it): the `sqlite` project skips it.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPeers, type Peers } from '../helpers/peers';
import { startProcess, type Proc } from '../helpers/processes';
import { onPostgres } from '../helpers/store';
import { tempDir } from '../helpers/temp';
import { waitFor } from '../helpers/wait';
import { createJob, executionsOf, getJob, jobEnded } from '../helpers/job-rollout';

const DEVICES = ['pj-a0', 'pj-a1', 'pj-a2', 'pj-b0', 'pj-b1', 'pj-b2'];
let peers: Peers;
const agents: Proc[] = [];

describe.skipIf(!onPostgres)('jobs on two peers', () => {
  beforeAll(async () => {
    peers = await startPeers(2);
    for (const deviceId of DEVICES) {
      const created = await peers.admin(0).post('/v1/devices', { device_id: deviceId });
      expect(created.status).toBe(201);
      // the a-devices' agents connect to the first peer, the b-devices' to the second
      const url = peers.peers[deviceId.startsWith('pj-a') ? 0 : 1]!.url;
      agents.push(
        startProcess(['agent', '--server', url, '--device-id', deviceId], {
          TETHER_DEVICE_TOKEN: created.body.data.agent_token,
          TETHER_FILES_ROOT: tempDir(),
        }),
      );
    }
    await waitFor(
      async () => (await peers.admin(0).get('/v1/devices?agent_status=online&per_page=100')).body.data.length === DEVICES.length,
      'every agent online',
      20_000,
    );
  }, 90_000);
  afterAll(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await peers?.stop();
  });

  it('share one pace: one start a second over both peers', async () => {
    const job = await createJob(peers.admin(1), { kind: 'command', target: { device_ids: DEVICES }, argv: ['true'], max_per_minute: 60 });
    const ended = await jobEnded(peers.admin(0), job.job_id);
    expect(ended).toMatchObject({ status: 'completed', counts: { succeeded: 6 } });
    const executions = await executionsOf(peers.admin(0), job.job_id);
    for (const e of executions) expect(e).toMatchObject({ status: 'succeeded', attempt: 1 });
    const starts = executions.map((e) => Date.parse(e.started_at!)).sort((a, b) => a - b);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(900);
    // each peer started its own agents' executions
    const db = new pg.Client({ connectionString: peers.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query<{ node: string }>('SELECT DISTINCT node FROM job_executions WHERE job_id = $1', [job.job_id]);
      expect(rows.map((r) => r.node.replace(/-[a-z0-9]{8}$/, '')).sort()).toEqual(['peer-a', 'peer-b']);
    } finally {
      await db.end();
    }
  });

  it('share one in-flight bound, and never start an execution twice', async () => {
    const job = await createJob(peers.admin(0), {
      kind: 'command',
      target: { device_ids: DEVICES },
      argv: ['sleep', '1'],
      max_per_minute: null,
      max_in_flight: 2,
    });
    let most = 0;
    const ended = await waitFor(
      async () => {
        const j = await getJob(peers.admin(1), job.job_id);
        most = Math.max(most, j.counts.in_progress);
        return j.status !== 'in_progress' && j;
      },
      'the job to end',
      40_000,
      50,
    );
    expect(ended.counts.succeeded).toBe(6);
    expect(most).toBe(2);
    for (const e of await executionsOf(peers.admin(1), job.job_id)) expect(e).toMatchObject({ status: 'succeeded', attempt: 1 });
    const audit = await peers.admin(0).get(`/v1/audit/remote-access?job_id=${job.job_id}&event=job.completed`);
    expect(audit.body.data).toHaveLength(1);
  });
});
