/**
 * @module `tether cluster nats-config` (docs/cluster.md, set-up): the NATS server configuration and
 * one credentials file per node, as NATS's own `nsc` makes them: an operator, one account, and a
 * user per node whose JWT carries the node's subject permissions (`natsPermissions`). The server
 * trusts the operator and holds the account in memory; it never sees a node's key, and a user JWT
 * signed by the account is all a new node needs, so adding an edge later changes nothing for the
 * server or the other nodes. The operator's and the accounts' keys stay in the directory (0600),
 * to sign the next edge's credentials.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createAccount, createOperator, createUser, encodeAccount, encodeOperator, encodeUser, fmtCreds, fromSeed, type KeyPair } from '@nats-io/jwt';
import { CONTROL_NAME, natsPermissions, NODE_NAME } from '../shared/protocol/cluster';
import { PEER_PREFIX } from '../shared/protocol/peers';

export interface NatsConfigOptions {
  out: string;
  /** Edge names: each gets `edge-NAME.creds`. */
  edges: readonly string[];
  /** Peer names (`tether server` on PostgreSQL, docs/peers.md): each gets `peer-NAME.creds`. */
  peers?: readonly string[] | undefined;
  /** Where the NATS server listens (default 127.0.0.1:4222). */
  listen: string;
}

/** What a run wrote (`created`) and found already there (`kept`). */
export interface NatsConfigResult {
  config: string;
  created: string[];
  kept: string[];
}

export class NatsConfigError extends Error {
  override name = 'NatsConfigError';
}

const OPERATOR_SEED = 'operator.nk';
const ACCOUNT_SEED = 'account.nk';
/** NATS's own system account (its monitoring and events); no node is in it. */
const SYSTEM_SEED = 'system.nk';

/** A key kept in the directory, or a new one written there (mode 0600). */
function keyIn(dir: string, file: string, create: () => KeyPair): KeyPair {
  const path = join(dir, file);
  if (existsSync(path)) return fromSeed(new TextEncoder().encode(readFileSync(path, 'utf8').trim()));
  const kp = create();
  writeFileSync(path, `${new TextDecoder().decode(kp.getSeed())}\n`, { mode: 0o600 });
  return kp;
}

/** The edge's node name: `edge-NAME`, unless NAME already starts with `edge-`. */
export const edgeName = (name: string): string => (name.startsWith('edge-') ? name : `edge-${name}`);
/** The peer's node name: `peer-NAME`, unless NAME already starts with `peer-`. */
export const peerName = (name: string): string => (name.startsWith(PEER_PREFIX) ? name : `${PEER_PREFIX}${name}`);

export async function writeNatsConfig(options: NatsConfigOptions): Promise<NatsConfigResult> {
  const names = [CONTROL_NAME, ...options.edges.map(edgeName), ...(options.peers ?? []).map(peerName)];
  for (const name of names) {
    if (!NODE_NAME.test(name) || (name === CONTROL_NAME && names.indexOf(name) !== 0)) {
      throw new NatsConfigError(`${JSON.stringify(name)} is not a node name: lowercase letters, digits and -, at most 47 characters, not "control"`);
    }
  }
  if (!/^(\[[0-9a-fA-F:.]+\]|[^:\s]+):\d{1,5}$/.test(options.listen))
    throw new NatsConfigError(`--listen ${JSON.stringify(options.listen)}: must be host:port`);
  mkdirSync(options.out, { recursive: true, mode: 0o700 });
  const operator = keyIn(options.out, OPERATOR_SEED, createOperator);
  const account = keyIn(options.out, ACCOUNT_SEED, createAccount);
  const system = keyIn(options.out, SYSTEM_SEED, createAccount);
  const created: string[] = [];
  const kept: string[] = [];

  for (const name of names) {
    const file = join(options.out, `${name}.creds`);
    if (existsSync(file)) {
      kept.push(file);
      continue;
    }
    const user = createUser();
    const { pub, sub } = natsPermissions(name);
    // `resp`: the node may answer each request it receives, once (its replies need no other subject).
    const jwt = await encodeUser(name, user, account, { pub: { allow: pub }, sub: { allow: sub }, resp: { max: 1, ttl: 0 } });
    writeFileSync(file, fmtCreds(jwt, user), { mode: 0o600 });
    chmodSync(file, 0o600);
    created.push(file);
  }

  const operatorJwt = await encodeOperator('tether', operator);
  const limits = { subs: -1, conn: -1, leaf: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true };
  const accountJwt = await encodeAccount('tether', account, { limits } as Parameters<typeof encodeAccount>[2], { signer: operator });
  const systemJwt = await encodeAccount('SYS', system, {}, { signer: operator });
  const config = join(options.out, 'nats-server.conf');
  writeFileSync(
    config,
    [
      '# Written by `tether cluster nats-config`: run `nats-server -c nats-server.conf`.',
      '# Only holders of a credentials file of this directory may connect; each may use its own subjects only.',
      `listen: ${options.listen}`,
      `operator: ${operatorJwt}`,
      `system_account: ${system.getPublicKey()}`,
      'resolver: MEMORY',
      'resolver_preload: {',
      `  ${account.getPublicKey()}: ${accountJwt}`,
      `  ${system.getPublicKey()}: ${systemJwt}`,
      '}',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return { config, created, kept };
}
