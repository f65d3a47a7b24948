/**
 * @module Deployed services per environment, their revisions, and the deployment audit log. A
 * service row changes only in place of the row as it was read (`put`, `progress`, `delete` with
 * `previous`): of peers changing one service at once, one wins and the others learn that they lost
 * (false) and read it again, so no change is lost to another made in between.
 */
import type { ExpressionBuilder } from 'kysely';
import { affected, type Executor, type Schema } from './schema';

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

/** What a runtime report changes in a service row. */
export interface Progress {
  ready: number;
  status: ServiceStatus;
  sync: 'Synced' | 'OutOfSync';
  /** Why the rollout failed; null (the default) unless `status` is `failed`. */
  message?: string | null | undefined;
}

/** The columns of a service row besides its key, which `put` writes and compares. */
const STATE = [
  'status',
  'current_revision',
  'previous_revision',
  'desired_replicas',
  'ready_replicas',
  'sync_status',
  'canary_revision',
  'canary_weight',
  'rollout',
  'last_deployed_at',
  'created_at',
  'status_message',
] as const satisfies readonly (keyof ServiceRow)[];

/** A service's columns alone: a row read with its image (`CurrentImage`) can be written back. */
const columnsOf = (row: ServiceRow): ServiceRow => {
  const { current_image: _image, current_image_of: _of, ...columns } = row as ServiceRow & Partial<CurrentImage>;
  return columns;
};

/** The service `row` names, still exactly as it was read: every column equal (nulls included). */
function unchanged(row: ServiceRow) {
  return (eb: ExpressionBuilder<Schema, 'services'>) =>
    eb.and([
      eb('name', '=', row.name),
      eb('environment', '=', row.environment),
      ...STATE.map((column) => (row[column] === null ? eb(column, 'is', null) : eb(column, '=', row[column]))),
    ]);
}

/** A service with the image of its current revision, which every record shows: one statement per read. */
const withImage = (db: Executor) =>
  db
    .selectFrom('services as s')
    .innerJoin('revisions as r', (join) =>
      join.onRef('r.service', '=', 's.name').onRef('r.environment', '=', 's.environment').onRef('r.revision', '=', 's.current_revision'),
    )
    .selectAll('s')
    .select(['r.image as current_image', 'r.revision as current_image_of']);

/** A service row as read, with the image of its current revision. */
export type ServiceWithImage = ServiceRow & CurrentImage;
const asServed = (row: object) => row as ServiceWithImage;

function auditFilter(q: Omit<DeploymentAuditQuery, 'limit' | 'offset'>) {
  return (eb: ExpressionBuilder<Schema, 'deployment_audit'>) => {
    const terms = [];
    if (q.service !== undefined) terms.push(eb('service', '=', q.service));
    if (q.environment !== undefined) terms.push(eb('environment', '=', q.environment));
    if (q.event !== undefined) terms.push(eb('event', '=', q.event));
    if (q.actor !== undefined) terms.push(eb('actor', '=', q.actor));
    if (q.since !== undefined) terms.push(eb('at', '>', q.since));
    return eb.and(terms);
  };
}

export function createServiceRepo(db: Executor) {
  const count = async (query: Promise<{ n: number | string | bigint }>): Promise<number> => Number((await query).n);

  return {
    get: async (name: string, env: Environment): Promise<ServiceWithImage | undefined> => {
      const row = await withImage(db).where('s.name', '=', name).where('s.environment', '=', env).executeTakeFirst();
      return row && asServed(row);
    },
    /**
     * Writes a service: a new one when `previous` is undefined (false if it exists by then), else in
     * place of `previous` (false if the row is no longer exactly that, or gone). `created_at` stays.
     */
    async put(row: ServiceRow, previous: ServiceRow | undefined): Promise<boolean> {
      const columns = columnsOf(row);
      if (!previous) {
        const inserted = await db
          .insertInto('services')
          .values(columns)
          .onConflict((oc) => oc.columns(['name', 'environment']).doNothing())
          .returning('name')
          .executeTakeFirst();
        return inserted !== undefined;
      }
      const { name: _name, environment: _env, created_at: _created, ...changes } = columns;
      return (
        affected(
          await db
            .updateTable('services')
            .set(changes)
            .where(unchanged(columnsOf(previous)))
            .executeTakeFirst(),
        ) === 1
      );
    },
    /**
     * Records a runtime report on the row as it was read (`previous`, of the rollout the report is
     * for); false if the row moved on since: a stale rollout, or another report or change first.
     */
    progress: async (previous: ServiceRow, p: Progress): Promise<boolean> =>
      affected(
        await db
          .updateTable('services')
          .set({ ready_replicas: p.ready, status: p.status, sync_status: p.sync, status_message: p.message ?? null })
          .where(unchanged(columnsOf(previous)))
          .executeTakeFirst(),
      ) === 1,
    /** Deletes a service with its revisions; with `previous`, only while it is still exactly that. */
    delete: async (name: string, env: Environment, previous?: ServiceRow): Promise<boolean> => {
      let query = db.deleteFrom('services').where('name', '=', name).where('environment', '=', env);
      if (previous) query = query.where(unchanged(columnsOf(previous)));
      return affected(await query.executeTakeFirst()) === 1;
    },
    async list(env: Environment, status: ServiceStatus | undefined, limit: number, offset: number): Promise<{ items: ServiceWithImage[]; total: number }> {
      const [items, total] = await Promise.all([
        withImage(db)
          .where('s.environment', '=', env)
          .$if(status !== undefined, (q) => q.where('s.status', '=', status!))
          .orderBy('s.name')
          .limit(limit)
          .offset(offset)
          .execute(),
        count(
          db
            .selectFrom('services')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('environment', '=', env)
            .$if(status !== undefined, (q) => q.where('status', '=', status!))
            .executeTakeFirstOrThrow(),
        ),
      ]);
      return { items: items.map(asServed), total };
    },
    deploying: async (): Promise<ServiceRow[]> => (await db.selectFrom('services').selectAll().where('status', '=', 'deploying').execute()) as ServiceRow[],
    /** Adds a revision, or updates the one deployed again (a rollback). */
    async putRevision(row: RevisionRow): Promise<void> {
      const { image, spec, replicas, deployed_at, deployed_by } = row;
      await db
        .insertInto('revisions')
        .values(row)
        .onConflict((oc) => oc.columns(['service', 'environment', 'revision']).doUpdateSet({ image, spec, replicas, deployed_at, deployed_by }))
        .execute();
    },
    revision: async (name: string, env: Environment, rev: string): Promise<RevisionRow | undefined> =>
      (await db
        .selectFrom('revisions')
        .selectAll()
        .where('service', '=', name)
        .where('environment', '=', env)
        .where('revision', '=', rev)
        .executeTakeFirst()) as RevisionRow | undefined,
    /** A service's revisions, the last deployed first; of two deployed at the same moment, the greater revision name first. */
    async history(name: string, env: Environment, limit: number, offset: number): Promise<{ items: RevisionRow[]; total: number }> {
      const of = () => db.selectFrom('revisions').where('service', '=', name).where('environment', '=', env);
      const [items, total] = await Promise.all([
        of().selectAll().orderBy('deployed_at', 'desc').orderBy('revision', 'desc').limit(limit).offset(offset).execute(),
        count(
          of()
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow(),
        ),
      ]);
      return { items: items as RevisionRow[], total };
    },
    async audit(event: Omit<DeploymentEvent, 'id'>): Promise<void> {
      await db
        .insertInto('deployment_audit')
        .values({ ...event, details: JSON.stringify(event.details) })
        .execute();
    },
    async auditList(q: DeploymentAuditQuery): Promise<{ items: DeploymentEvent[]; total: number }> {
      const where = auditFilter(q);
      const [items, total] = await Promise.all([
        db.selectFrom('deployment_audit').selectAll().where(where).orderBy('id', 'desc').limit(q.limit).offset(q.offset).execute(),
        count(
          db
            .selectFrom('deployment_audit')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where(where)
            .executeTakeFirstOrThrow(),
        ),
      ]);
      return {
        items: items.map((r) => ({ ...r, environment: r.environment as Environment, details: JSON.parse(r.details) as Record<string, unknown> })),
        total,
      };
    },
  };
}
export type ServiceRepo = ReturnType<typeof createServiceRepo>;
