/**
 * @module An edge's byte counts of session streams, sent to the control node (which writes them
 * to the sessions' records) until it acknowledges them: counts not acknowledged go again with the
 * next ones.
 */
import { CONTROL_VERBS, okReply, type ControlVerb } from '../shared/protocol/cluster';
import type { Bus } from './bus';

type Counts = { toDevice: number; fromDevice: number };

export function createEdgeBytes(bus: Bus, subject: (verb: ControlVerb) => string) {
  let bytes = new Map<string, Counts>();
  let inFlight = false;

  function add(sessionId: string, c: Counts): void {
    const sum = bytes.get(sessionId);
    if (sum) {
      sum.toDevice += c.toDevice;
      sum.fromDevice += c.fromDevice;
    } else bytes.set(sessionId, { ...c });
  }

  return {
    /** Where the relay records byte counts. */
    record(counts: Map<string, Counts>): void {
      for (const [id, c] of counts) add(id, c);
    },

    /** Sends the counts not sent yet, one request at a time. */
    async flush(): Promise<void> {
      if (inFlight || bytes.size === 0 || !bus.up()) return;
      const sending = bytes;
      bytes = new Map();
      inFlight = true;
      try {
        await bus.request(subject(CONTROL_VERBS.bytes), { counts: [...sending].map(([id, c]) => [id, c.toDevice, c.fromDevice]) }, okReply);
      } catch {
        // Not acknowledged: counted again with the next ones.
        for (const [id, c] of sending) add(id, c);
      } finally {
        inFlight = false;
      }
    },
  };
}
