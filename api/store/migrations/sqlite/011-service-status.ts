/**
 * Migration 11: why a service's rollout failed (`status_message`, the runtime's words with the
 * container's last log lines), kept across restarts; null unless the status is `failed`.
 */
export default `
ALTER TABLE services ADD COLUMN status_message TEXT CHECK (status_message IS NULL OR length(status_message) <= 8192);
`;
