/**
 * @module The peers that run (docs/peers.md): each says every few seconds that it is alive, with
 * the URL clients reach it at. A peer silent for long enough is gone: the housekeeping peer clears
 * the presence of the agents it held (they reconnect to another peer) and forgets it.
 */
import type { Executor } from './schema';

export interface PeerRow {
  node: string;
  url: string;
  started_at: string;
  seen_at: number;
}

export function createPeerRepo(db: Executor) {
  return {
    /** Records that `node` is alive at `at` (ms). */
    async beat(node: string, url: string, startedAt: string, at: number): Promise<void> {
      await db
        .insertInto('peers')
        .values({ node, url, started_at: startedAt, seen_at: at })
        .onConflict((oc) => oc.column('node').doUpdateSet({ url, seen_at: at }))
        .execute();
    },
    /** The peers that said they were alive at or after `since` (ms). */
    live: (since: number): Promise<PeerRow[]> => db.selectFrom('peers').selectAll().where('seen_at', '>=', since).orderBy('node').execute(),
    /** Forgets the peers silent since before `before`; returns their names. */
    async removeSilent(before: number): Promise<string[]> {
      const gone = await db.deleteFrom('peers').where('seen_at', '<', before).returning('node').execute();
      return gone.map((r) => r.node);
    },
    /** Forgets `node` (it stops). */
    async remove(node: string): Promise<void> {
      await db.deleteFrom('peers').where('node', '=', node).execute();
    },
  };
}
export type PeerRepo = ReturnType<typeof createPeerRepo>;
