/**
 * @module What peers (`tether server` processes sharing one PostgreSQL database and one NATS bus,
 * CONTRACT 10.1, docs/peers.md) tell each other on `tether.peers.<kind>`: the relay's events (so
 * the peer that holds a device's agent acts on them), the API's events (so `GET /v1/events` on any
 * peer carries every peer's), which session streams gained or lost their client (so whichever peer
 * looks closes an unused session `idle`), and tokens and users that changed (so no peer's cache
 * admits a revoked token). The database holds every decision; these messages only say "look now".
 *
 * Only peers may publish here (their credentials, `natsPermissions` of a `peer-` name); each
 * message names the run that sent it, and a peer ignores its own. Every message is validated.
 */
import * as z from 'zod/mini';
import { broadcastMessage } from './cluster';

/** Every peer subscribes to `tether.peers.>`; one subject per kind. */
export const PEER_SUBJECTS = {
  relay: 'tether.peers.relay',
  event: 'tether.peers.event',
  streams: 'tether.peers.streams',
  identity: 'tether.peers.identity',
} as const;
export type PeerKind = keyof typeof PEER_SUBJECTS;
export const PEER_WILDCARD = 'tether.peers.>';

/** Node names of peers start with this (their credentials' name, `tether cluster nats-config --peer NAME`). */
export const PEER_PREFIX = 'peer-';

const runId = z.string().check(z.regex(/^[a-z0-9-]{1,64}$/));
const sessionId = z.string().check(z.maxLength(64));
const ids = z.array(sessionId).check(z.maxLength(2_000));

export const peerRelayMessage = z.object({ from: runId, event: broadcastMessage });
/** An API event (shared/api/events.ts): checked again by the events schema where it is delivered. */
export const peerEventMessage = z.object({
  from: runId,
  event: z.object({ event: z.string().check(z.maxLength(64)), data: z.record(z.string(), z.unknown()) }),
});
export const peerStreamsMessage = z.object({ from: runId, attached: ids, detached: ids });
export const peerIdentityMessage = z.object({
  from: runId,
  /** Tokens revoked (their cache entries go at once). */
  tokens: z.array(z.string().check(z.maxLength(64))).check(z.maxLength(10_000)),
  /** Users whose role, state or password changed. */
  users: z.array(z.string().check(z.maxLength(128))).check(z.maxLength(1_000)),
});
