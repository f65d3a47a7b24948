/**
 * @module The mode a client asks of a session's stream in its URL (`&mode=exec`; docs/session-streams.md,
 * exec), checked where the client joins, so the device learns it with `stream.open` and never has to
 * guess from the client's first frame. Only `shell` sessions have modes.
 */
import { STREAM_MODE_PARAM, STREAM_MODES, streamModeSchema, type SessionProtocol, type StreamMode } from '../shared/protocol/control-channel';

export type ModeChoice = { ok: true; mode: StreamMode } | { ok: false; reason: string };

/** The mode the stream URL's query asks for (`shell` when it names none), or why it cannot have it. */
export function streamModeOf(query: URLSearchParams, protocol: SessionProtocol): ModeChoice {
  const given = query.getAll(STREAM_MODE_PARAM);
  if (given.length === 0) return { ok: true, mode: 'shell' };
  if (protocol !== 'shell') return { ok: false, reason: `${STREAM_MODE_PARAM} is for shell sessions only; this is a ${protocol} session` };
  const parsed = streamModeSchema.safeParse(given[0]);
  if (given.length > 1 || !parsed.success) {
    // A close reason is at most 123 bytes: the value is cut to a few printable ASCII characters.
    const shown = JSON.stringify(
      given
        .join(',')
        .slice(0, 24)
        .replace(/[^\x20-\x7e]/g, '?'),
    );
    return { ok: false, reason: `bad ${STREAM_MODE_PARAM} ${shown}: one of ${STREAM_MODES.join(', ')}` };
  }
  return { ok: true, mode: parsed.data };
}
