/** The mode a client asks of a session's stream in its URL (`relay/stream-mode.ts`). */
import { describe, expect, it } from 'vitest';
import { streamModeOf } from '../../../relay/stream-mode';

const query = (search: string) => new URL(`ws://relay/v1/remote-access/sessions/sess-1/stream?ticket=t${search}`).searchParams;

describe('streamModeOf', () => {
  it('is shell without a mode, on any protocol, and the mode a shell session names', () => {
    expect(streamModeOf(query(''), 'shell')).toEqual({ ok: true, mode: 'shell' });
    expect(streamModeOf(query(''), 'port-forward')).toEqual({ ok: true, mode: 'shell' });
    expect(streamModeOf(query('&mode=exec'), 'shell')).toEqual({ ok: true, mode: 'exec' });
    expect(streamModeOf(query('&mode=shell'), 'shell')).toEqual({ ok: true, mode: 'shell' });
  });

  it('refuses a mode it does not know, an empty one, one given twice, and any on a session that is not a shell', () => {
    expect(streamModeOf(query('&mode=EXEC'), 'shell')).toEqual({ ok: false, reason: 'bad mode "EXEC": one of shell, exec' });
    expect(streamModeOf(query('&mode='), 'shell')).toEqual({ ok: false, reason: 'bad mode "": one of shell, exec' });
    expect(streamModeOf(query('&mode=exec&mode=exec'), 'shell')).toEqual({ ok: false, reason: 'bad mode "exec,exec": one of shell, exec' });
    for (const protocol of ['diagnostics', 'file-transfer', 'port-forward'] as const) {
      expect(streamModeOf(query('&mode=shell'), protocol)).toEqual({ ok: false, reason: `mode is for shell sessions only; this is a ${protocol} session` });
    }
  });

  it('keeps its close reason within the 123 bytes a close frame holds, whatever the value', () => {
    for (const value of ['x'.repeat(5000), '😀'.repeat(500), '"\\'.repeat(100)]) {
      const choice = streamModeOf(query(`&mode=${encodeURIComponent(value)}`), 'shell');
      expect(choice.ok).toBe(false);
      if (!choice.ok) expect(Buffer.byteLength(choice.reason)).toBeLessThanOrEqual(123);
    }
  });
});
