/** @module Deployed services per environment, their revisions, and the deployment audit log. */
import type { Db } from './db';

export type Environment = 'dev' | 'staging' | 'prod';
export type ServiceStatus = 'healthy' | 'degraded' | 'failed' | 'deploying';

export interface ServiceRow {
  name: string;
  environment: Environment;
  status: ServiceStatus;
  current_revision: string;
  previous_revision: string | null;
  desired_replicas: number;
  ready_replicas: number;
  sync_status: 'Synced' | 'OutOfSync';
  canary_revision: string | null;
  canary_weight: number | null;
  rollout: number;
  last_deployed_at: string;
  created_at: string;
  /** Why the rollout failed, as the runtime said; null unless `status` is `failed`. */
  status_message: string | null;
}

/** Read along with a service: the image of the revision that was current when it was read. */
export interface CurrentImage {
  current_image: string;
  current_image_of: string;
}

export interface RevisionRow {
  service: string;
  environment: Environment;
  revision: string;
  image: string;
  spec: string;
  replicas: number;
  deployed_at: string;
  deployed_by: string;
}

export interface DeploymentEvent {
  id: number;
  event: string;
  service: string;
  environment: Environment;
  revision: string | null;
  actor: string;
  at: string;
  details: Record<string, unknown>;
}

export interface DeploymentAuditQuery {
  service?: string | undefined;
  environment?: Environment | undefined;
  event?: string | undefined;
  actor?: string | undefined;
  since?: string | undefined;
  limit: number;
  offset: number;
}

const AUDIT_FILTER = `(@service IS NULL OR service = @service)
  AND (@environment IS NULL OR environment = @environment)
  AND (@event IS NULL OR event = @event)
  AND (@actor IS NULL OR actor = @actor)
  AND (@since IS NULL OR at > @since)`;

export function createServiceRepo(db: Db) {
  // With the current revision's image, which every record shows: one statement per read.
  const get = db.prepare<[string, string], ServiceRow & CurrentImage>(
    `SELECT s.*, r.image AS current_image, r.revision AS current_image_of FROM services s
       JOIN revisions r ON r.service = s.name AND r.environment = s.environment AND r.revision = s.current_revision
      WHERE s.name = ? AND s.environment = ?`,
  );
  const upsert = db.prepare(
    `INSERT INTO services (name, environment, status, current_revision, previous_revision, desired_replicas, ready_replicas,
                           sync_status, canary_revision, canary_weight, rollout, last_deployed_at, created_at, status_message)
     VALUES (@name, @environment, @status, @current_revision, @previous_revision, @desired_replicas, @ready_replicas,
             @sync_status, @canary_revision, @canary_weight, @rollout, @last_deployed_at, @created_at, @status_message)
     ON CONFLICT (name, environment) DO UPDATE SET
       status = excluded.status, current_revision = excluded.current_revision,
       previous_revision = excluded.previous_revision, desired_replicas = excluded.desired_replicas,
       ready_replicas = excluded.ready_replicas, sync_status = excluded.sync_status,
       canary_revision = excluded.canary_revision, canary_weight = excluded.canary_weight,
       rollout = excluded.rollout, last_deployed_at = excluded.last_deployed_at, status_message = excluded.status_message`,
  );
  const progress = db.prepare<[number, string, string, string | null, string, string, number]>(
    `UPDATE services SET ready_replicas = ?, status = ?, sync_status = ?, status_message = ?
      WHERE name = ? AND environment = ? AND rollout = ?`,
  );
  const remove = db.prepare<[string, string]>('DELETE FROM services WHERE name = ? AND environment = ?');
  const page = db.prepare<[string, string | null, string | null, number, number], ServiceRow & CurrentImage>(
    `SELECT s.*, r.image AS current_image, r.revision AS current_image_of FROM services s
       JOIN revisions r ON r.service = s.name AND r.environment = s.environment AND r.revision = s.current_revision
      WHERE s.environment = ? AND (? IS NULL OR s.status = ?) ORDER BY s.name LIMIT ? OFFSET ?`,
  );
  const count = db.prepare<[string, string | null, string | null], { n: number }>(
    'SELECT COUNT(*) AS n FROM services WHERE environment = ? AND (? IS NULL OR status = ?)',
  );
  const deploying = db.prepare<[], ServiceRow>("SELECT * FROM services WHERE status = 'deploying'");
  const putRevision = db.prepare(
    `INSERT INTO revisions (service, environment, revision, image, spec, replicas, deployed_at, deployed_by)
     VALUES (@service, @environment, @revision, @image, @spec, @replicas, @deployed_at, @deployed_by)
     ON CONFLICT (service, environment, revision) DO UPDATE SET
       image = excluded.image, spec = excluded.spec, replicas = excluded.replicas,
       deployed_at = excluded.deployed_at, deployed_by = excluded.deployed_by`,
  );
  const revision = db.prepare<[string, string, string], RevisionRow>('SELECT * FROM revisions WHERE service = ? AND environment = ? AND revision = ?');
  const history = db.prepare<[string, string, number, number], RevisionRow>(
    `SELECT * FROM revisions WHERE service = ? AND environment = ?
      ORDER BY deployed_at DESC, rowid DESC LIMIT ? OFFSET ?`,
  );
  const historyCount = db.prepare<[string, string], { n: number }>('SELECT COUNT(*) AS n FROM revisions WHERE service = ? AND environment = ?');
  const audit = db.prepare(
    `INSERT INTO deployment_audit (event, service, environment, revision, actor, at, details)
     VALUES (@event, @service, @environment, @revision, @actor, @at, @details)`,
  );
  const auditPage = db.prepare<[Record<string, unknown>], Omit<DeploymentEvent, 'details'> & { details: string }>(
    `SELECT * FROM deployment_audit WHERE ${AUDIT_FILTER} ORDER BY id DESC LIMIT @limit OFFSET @offset`,
  );
  const auditCount = db.prepare<[Record<string, unknown>], { n: number }>(`SELECT COUNT(*) AS n FROM deployment_audit WHERE ${AUDIT_FILTER}`);

  return {
    get: (name: string, env: Environment): (ServiceRow & CurrentImage) | undefined => get.get(name, env),
    put(row: ServiceRow): void {
      const { current_image: _image, current_image_of: _of, ...columns } = row as ServiceRow & Partial<CurrentImage>;
      upsert.run(columns);
    },
    /** Records a runtime report for the rollout it belongs to (with why it failed, when it did); false if that rollout is stale. */
    progress: (
      name: string,
      env: Environment,
      rollout: number,
      ready: number,
      status: ServiceStatus,
      sync: 'Synced' | 'OutOfSync',
      message: string | null = null,
    ) => progress.run(ready, status, sync, message, name, env, rollout).changes === 1,
    delete: (name: string, env: Environment): boolean => remove.run(name, env).changes === 1,
    list(env: Environment, status: ServiceStatus | undefined, limit: number, offset: number) {
      const s = status ?? null;
      return { items: page.all(env, s, s, limit, offset), total: count.get(env, s, s)!.n };
    },
    deploying: (): ServiceRow[] => deploying.all(),
    putRevision(row: RevisionRow): void {
      putRevision.run(row);
    },
    revision: (name: string, env: Environment, rev: string): RevisionRow | undefined => revision.get(name, env, rev),
    history(name: string, env: Environment, limit: number, offset: number) {
      return { items: history.all(name, env, limit, offset), total: historyCount.get(name, env)!.n };
    },
    audit(event: Omit<DeploymentEvent, 'id'>): void {
      audit.run({ ...event, details: JSON.stringify(event.details) });
    },
    auditList(q: DeploymentAuditQuery): { items: DeploymentEvent[]; total: number } {
      const p = {
        service: q.service ?? null,
        environment: q.environment ?? null,
        event: q.event ?? null,
        actor: q.actor ?? null,
        since: q.since ?? null,
      };
      return {
        items: auditPage.all({ ...p, limit: q.limit, offset: q.offset }).map((r) => ({ ...r, details: JSON.parse(r.details) })),
        total: auditCount.get(p)!.n,
      };
    },
  };
}
export type ServiceRepo = ReturnType<typeof createServiceRepo>;
