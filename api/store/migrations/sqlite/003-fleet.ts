/** Migration 3: tenant-scoped fleet groups and vehicles. */
export default `
CREATE TABLE fleet_groups (
  tenant_id     TEXT NOT NULL,
  group_id      TEXT NOT NULL,
  name          TEXT NOT NULL,
  -- The name as compared: trimmed, Unicode-normalised, lower-cased. Unique per tenant.
  name_key      TEXT NOT NULL,
  description   TEXT,
  region        TEXT,
  tags          TEXT NOT NULL DEFAULT '[]',
  vehicle_count INTEGER NOT NULL DEFAULT 0 CHECK (vehicle_count >= 0),
  created_at    TEXT NOT NULL,
  created_by    TEXT NOT NULL,
  PRIMARY KEY (tenant_id, group_id)
) STRICT;
CREATE UNIQUE INDEX fleet_groups_name ON fleet_groups (tenant_id, name_key);
CREATE INDEX fleet_groups_created ON fleet_groups (tenant_id, created_at, group_id);

CREATE TABLE fleet_vehicles (
  tenant_id   TEXT NOT NULL,
  vehicle_id  TEXT NOT NULL,
  vin         TEXT NOT NULL,
  status      TEXT NOT NULL DEFAULT 'active',
  device_id   TEXT,
  group_id    TEXT,
  assigned_at TEXT,
  assigned_by TEXT,
  created_at  TEXT NOT NULL,
  PRIMARY KEY (tenant_id, vehicle_id),
  FOREIGN KEY (tenant_id, group_id) REFERENCES fleet_groups (tenant_id, group_id)
) STRICT;
CREATE UNIQUE INDEX fleet_vehicles_vin ON fleet_vehicles (tenant_id, vin);
CREATE INDEX fleet_vehicles_group ON fleet_vehicles (tenant_id, group_id, vehicle_id);
`;
