/** Migration 2: services per environment, their revisions, and the deployment audit log. */
export default `
CREATE TABLE services (
  name               TEXT NOT NULL,
  environment        TEXT NOT NULL CHECK (environment IN ('dev', 'staging', 'prod')),
  status             TEXT NOT NULL CHECK (status IN ('healthy', 'degraded', 'failed', 'deploying')),
  current_revision   TEXT NOT NULL,
  previous_revision  TEXT,
  desired_replicas   INTEGER NOT NULL CHECK (desired_replicas BETWEEN 0 AND 1000),
  ready_replicas     INTEGER NOT NULL DEFAULT 0 CHECK (ready_replicas >= 0),
  sync_status        TEXT NOT NULL CHECK (sync_status IN ('Synced', 'OutOfSync')),
  canary_revision    TEXT,
  canary_weight      INTEGER CHECK (canary_weight BETWEEN 0 AND 100),
  -- Each apply, rollback or promote starts a new rollout; runtime reports of older ones are ignored.
  rollout            INTEGER NOT NULL DEFAULT 1,
  last_deployed_at   TEXT NOT NULL,
  created_at         TEXT NOT NULL,
  PRIMARY KEY (name, environment),
  CHECK ((canary_revision IS NULL) = (canary_weight IS NULL))
) STRICT;
CREATE INDEX services_env_status ON services (environment, status, name);

CREATE TABLE revisions (
  service      TEXT NOT NULL,
  environment  TEXT NOT NULL,
  revision     TEXT NOT NULL,
  image        TEXT NOT NULL,
  spec         TEXT NOT NULL, -- the SSD as submitted (YAML)
  replicas     INTEGER NOT NULL,
  deployed_at  TEXT NOT NULL,
  deployed_by  TEXT NOT NULL,
  PRIMARY KEY (service, environment, revision),
  FOREIGN KEY (service, environment) REFERENCES services (name, environment) ON DELETE CASCADE
) STRICT;
CREATE INDEX revisions_history ON revisions (service, environment, deployed_at);

CREATE TABLE deployment_audit (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  event       TEXT NOT NULL,
  service     TEXT NOT NULL,
  environment TEXT NOT NULL,
  revision    TEXT,
  actor       TEXT NOT NULL,
  at          TEXT NOT NULL,
  details     TEXT NOT NULL DEFAULT '{}'
) STRICT;
CREATE INDEX deployment_audit_service ON deployment_audit (service, environment, id);
`;
