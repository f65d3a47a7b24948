/**
 * @module A peer's place among the others (docs/peers.md): `tether server` with TETHER_DATABASE_URL
 * (PostgreSQL) and TETHER_NATS_URL. Its bus connection carries what the peers tell each other
 * (cluster/peers.ts), and the API hears from it what the other peers did. It serves agents and
 * clients like one process does; it does not serve edges (`tether broker` joins a cluster with one
 * control node, docs/cluster.md: a server with the control node's credentials is that, on either store).
 */
import type { Api, PeerPublisher } from '../api/app';
import { createBus, credsName, redactedUrl } from '../cluster/bus';
import type { LocalRelay } from '../cluster/local-relay';
import { createPeerLink } from '../cluster/peers';
import { CONTROL_NAME, nodeIdOf } from '../shared/protocol/cluster';
import { PEER_PREFIX } from '../shared/protocol/peers';
import { randomBase32 } from '../shared/ids';
import type { Logger } from '../shared/log';
import type { Metrics } from '../shared/metrics';
import type { Relay } from '../shared/relay/events';
import { ConfigError } from './config-error';

export interface PeerSettings {
  natsUrl: string;
  natsCreds: string | undefined;
}

export interface Peer {
  /** This run's id (`peer-NAME-` and 8 random characters). */
  run: string;
  /** The relay the API tells: this peer's, then the others'. */
  relay: Relay;
  /** What the API publishes to the other peers. */
  publisher: PeerPublisher;
  /** Whether the bus is up (readiness). */
  up(): boolean;
  /** Connects to the bus, acting on the others' messages with `localRelay` and `api`. */
  start(localRelay: LocalRelay, api: Api): void;
  close(): Promise<void>;
}

/**
 * Whether a server is a peer: on PostgreSQL with a bus, unless its credentials are the control
 * node's (`control.creds`: one control node for a cluster's edges, on either store, docs/cluster.md).
 */
export function isPeer(natsUrl: string | undefined, natsCreds: string | undefined, databaseUrl: string | undefined): boolean {
  if (natsUrl === undefined || databaseUrl === undefined) return false;
  return natsCreds === undefined || credsName(natsCreds) !== CONTROL_NAME;
}

/** The peer's name: its credentials' (which must be a peer's), or made up on an open loopback bus. */
function peerNameOf(settings: PeerSettings): string {
  if (settings.natsCreds === undefined) return `${PEER_PREFIX}${randomBase32(8)}`;
  const name = credsName(settings.natsCreds);
  if (name === undefined || !name.startsWith(PEER_PREFIX)) {
    throw new ConfigError(
      `server: TETHER_NATS_CREDS: ${settings.natsCreds} is not a peer's credentials (${name ?? 'no name'}); ` +
        'a tether server on PostgreSQL needs peer-NAME.creds (tether cluster nats-config --peer NAME)',
    );
  }
  return name;
}

export function createPeer(settings: PeerSettings, log: Logger, metrics: Metrics): Peer {
  const name = peerNameOf(settings);
  const run = nodeIdOf(name, randomBase32(8));
  const peerLog = log.child({ component: 'peers', node_id: run });
  let localRelay: LocalRelay | undefined;
  let api: Api | undefined;
  const bus = createBus({ url: settings.natsUrl, credsFile: settings.natsCreds, nodeName: name, name: `tether-${run}`, log: peerLog });
  metrics.gauge('tether_cluster_bus_up', '1 while this node is connected to NATS.', () => (bus.up() ? 1 : 0));
  const link = createPeerLink({
    bus,
    run,
    log: peerLog,
    localRelay: () => localRelay,
    onRelayEvent(event) {
      if (event.type === 'session.opened') api?.fromPeers.sessionOpened(event.session_id, event.expires_at);
      else if (event.type === 'session.extended') api?.fromPeers.sessionExtended(event.session_id, event.expires_at);
      else if (event.type === 'session.closed') api?.fromPeers.sessionClosed(event.session_id);
      else if (event.type === 'token.revoked') api?.fromPeers.identity([event.token_id], []);
    },
    onEvent: (event) => api?.fromPeers.event(event),
    onStreams: (attached, detached) => api?.fromPeers.streams(attached, detached),
    onIdentity: (tokens, users) => api?.fromPeers.identity(tokens, users),
  });
  peerLog.info('this server is a peer', { nats_url: redactedUrl(settings.natsUrl) });
  return {
    run,
    relay: link.relay,
    publisher: { event: link.event, identity: link.identity, streams: link.streams },
    up: bus.up,
    start(relay, started) {
      localRelay = relay;
      api = started;
      bus.start();
    },
    close: () => bus.close(),
  };
}
