/**
 * @module Which peer does the housekeeping (CONTRACT 10.1, docs/peers.md): the one holding a
 * PostgreSQL advisory lock on a connection of its own. The lock lives as long as that connection,
 * so when the peer dies (or only loses its database) the server releases it and another peer,
 * trying every CHECK_MS, takes over within seconds. No clock, lease or vote of ours is involved:
 * the database decides. On SQLite the one process always leads.
 */
import pg from 'pg';
import type { Logger } from '../../shared/log';

/** How often a peer tries to take the lock, and the leader checks that its connection still holds it. */
export const CHECK_MS = 1000;
/** The advisory lock's key (any constant; "tetherhk" in ASCII, within a bigint). */
const HOUSEKEEPING_LOCK = '8387229536148612971';

export interface Leadership {
  /** Whether this process leads now. */
  leads(): boolean;
  close(): Promise<void>;
}

/** Leadership on SQLite: the only process. */
export const soleLeader: Leadership = { leads: () => true, close: async () => {} };

/** Takes part in the election on the PostgreSQL database `url`; `onChange` hears each change of role. */
export function electLeader(url: string, log: Logger, onChange: (leads: boolean) => void = () => {}): Leadership {
  let client: pg.Client | undefined;
  let leading = false;
  let closed = false;
  let busy = false;

  function lose(why: string): void {
    const was = leading;
    leading = false;
    const old = client;
    client = undefined;
    void old?.end().catch(() => {});
    if (was) {
      log.warn('this peer no longer does the housekeeping', { why });
      onChange(false);
    }
  }

  async function tick(): Promise<void> {
    if (busy || closed) return;
    busy = true;
    try {
      if (!client) {
        const fresh = new pg.Client({ connectionString: url, connectionTimeoutMillis: CHECK_MS * 3, application_name: 'tether-leader' });
        fresh.on('error', (err) => lose(err.message));
        client = fresh;
        await fresh.connect();
      }
      if (leading) {
        await client.query('SELECT 1');
        return;
      }
      const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1::bigint) AS ok', [HOUSEKEEPING_LOCK]);
      if (rows[0]?.ok && !closed) {
        leading = true;
        log.info('this peer does the housekeeping now');
        onChange(true);
      }
    } catch (err) {
      lose((err as Error).message);
    } finally {
      busy = false;
    }
  }

  const timer = setInterval(() => void tick(), CHECK_MS);
  timer.unref();
  void tick();

  return {
    leads: () => leading,
    async close() {
      closed = true;
      clearInterval(timer);
      const was = leading;
      leading = false;
      // Ending the connection releases the lock at once: another peer takes over at its next try.
      await client?.end().catch(() => {});
      client = undefined;
      if (was) onChange(false);
    },
  };
}
