/** The API built in-process without a relay, on a temp store of the kind under test (for tests of what it serves, not of how). */
import { createApi, type Api } from '../../api/app';
import { simulatedRuntime } from '../../api/services/simulated-runtime';
import { detachedRelay } from '../../api/relay';
import { silentLogger } from '../../shared/log';
import { createMetrics } from '../../shared/metrics';
import { createTicketer } from '../../shared/auth/tickets';
import { openTestStore } from './store';
import { tempDir } from './temp';

export async function detachedApi(): Promise<{ api: Api; close(): Promise<void> }> {
  const store = await openTestStore();
  const api = createApi({
    store,
    relay: detachedRelay,
    log: silentLogger,
    metrics: createMetrics(),
    ticketer: createTicketer(Buffer.alloc(32, 1)),
    wsBase: () => 'ws://127.0.0.1:0',
    node: { run: 'server-testtest', url: 'http://127.0.0.1:0' },
    now: Date.now,
    runtime: simulatedRuntime(10),
    recordings: { dir: tempDir(), recordShell: true, recordInput: false, maxStoredBytes: 1 << 20, retentionDays: 90 },
  });
  return {
    api,
    async close() {
      await api.shutdown();
      await store.close();
    },
  };
}
