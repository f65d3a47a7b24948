/**
 * @module The access pages in words, without the DOM: statuses and protocols in order, durations,
 * labels, which policies match a device, a user's live grant, and the link to the request form
 * prefilled. Lists are kept here, checked whole against the API's types (the bundle takes nothing
 * from shared/ at run time).
 */
import type { AccessPolicy, AccessRequest, AccessRequestStatus } from '../../../../shared/api/access';
import type { SessionProtocol } from '../../../../shared/protocol/control-channel';

/** Every request status, for the filter: the open ones first. */
export const ACCESS_STATUS_ORDER = Object.keys({
  pending: true,
  approved: true,
  denied: true,
  canceled: true,
  expired: true,
  revoked: true,
  ended: true,
} satisfies Record<AccessRequestStatus, true>) as AccessRequestStatus[];

/** Every session protocol, in the docs' order. */
export const PROTOCOLS = Object.keys({
  shell: true,
  'file-transfer': true,
  diagnostics: true,
  'port-forward': true,
} satisfies Record<SessionProtocol, true>) as SessionProtocol[];

const PROTOCOL_WORDS: Record<SessionProtocol, string> = {
  shell: 'shell',
  'file-transfer': 'file transfer',
  diagnostics: 'diagnostics',
  'port-forward': 'port forwarding',
};

/** `shell`, `file transfer`: a protocol as words. */
export const protocolWords = (p: SessionProtocol) => PROTOCOL_WORDS[p];

/** "Shell and file transfer", "Shell, diagnostics and file transfer": protocols as a sentence's subject. */
export function protocolList(protocols: readonly SessionProtocol[]): string {
  const w = PROTOCOLS.filter((p) => protocols.includes(p)).map(protocolWords);
  const text = w.length <= 1 ? (w[0] ?? '') : `${w.slice(0, -1).join(', ')} and ${w[w.length - 1]}`;
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** `90 s`, `45 min`, `2 h`, `1 h 30 min`, `7 d`: a duration as people say it. */
export function durationText(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.round((seconds % 3600) / 60);
  return minutes === 0 ? `${hours} h` : `${hours} h ${minutes} min`;
}

/** `4:59`, `1:02:03`: what is left of a grant, for its countdown. */
export function countdownText(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const pad = (n: number) => String(n).padStart(2, '0');
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
}

/** `env=prod, site=north`: labels as written on the command line. */
export const labelsText = (labels: Record<string, string>) =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');

/** "env=prod site=north" (or with commas) → labels; a word without `=` is refused. */
export function parseLabels(text: string): Record<string, string> {
  const items = text.split(/[\s,]+/).filter(Boolean);
  if (items.length === 0) throw new Error('Name at least one label as key=value.');
  const bad = items.find((w) => w.indexOf('=') <= 0);
  if (bad) throw new Error(`“${bad}” is not key=value.`);
  return Object.fromEntries(items.map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
}

/** The policies that match a device by its labels (all of a policy's labels must be the device's). */
export const matchingPolicies = (policies: readonly AccessPolicy[], labels: Record<string, string>) =>
  policies.filter((p) => Object.entries(p.match.labels).every(([k, v]) => labels[k] === v));

/** Whether a request is a grant in force at `now`: approved, started, not ended. */
export const isLive = (r: AccessRequest, now = Date.now()) =>
  r.status === 'approved' && !!r.starts_at && !!r.ends_at && Date.parse(r.starts_at) <= now && now < Date.parse(r.ends_at);

/** The request form, prefilled with a device and protocols. */
export function requestLink(deviceId: string, protocols: readonly SessionProtocol[]): string {
  const q = new URLSearchParams({ device: deviceId });
  if (protocols.length > 0) q.set('protocols', protocols.join(','));
  return `#/access?${q}`;
}

/** Pending first (the ones waiting for someone), then newest first. */
export const pendingFirst = (rows: readonly AccessRequest[]) =>
  [...rows].sort((a, b) => Number(b.status === 'pending') - Number(a.status === 'pending') || b.created_at.localeCompare(a.created_at));
