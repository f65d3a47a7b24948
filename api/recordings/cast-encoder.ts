/**
 * @module How a recording's queued events become asciicast v2 (`shared/asciicast.ts`): the header,
 * with the terminal size the client first said, and one line per event, its time in seconds since
 * the start by the monotonic clock and never running backwards. UTF-8 sequences split across
 * frames are carried over to the next batch (a StringDecoder per direction).
 */
import { StringDecoder } from 'node:string_decoder';
import { castEventLine, castHeaderLine, type CastCode } from '../../shared/asciicast';

/** What the taps queue: a timestamp from the monotonic clock and what passed. */
export type PendingEvent =
  | { t: number; code: 'o' | 'i'; data: Buffer }
  /** A text message from the client (resize) or the device (exit). */
  | { t: number; code: 'client-text' | 'device-text'; data: Buffer }
  | { t: number; code: 'm'; data: string };

/** Whose session a cast records, as its header says. */
export interface CastIdentity {
  sessionId: string;
  deviceId: string;
  username: string;
  /** Wall clock at the start (the header's timestamp). */
  startedAt: number;
  recordInput: boolean;
}

export class CastEncoder {
  readonly #startMono = performance.now();
  #decoders = { o: new StringDecoder('utf8'), i: new StringDecoder('utf8') };
  #lastT = 0;

  /** The time of the last event encoded (s): the cast's duration so far. */
  get lastT(): number {
    return this.#lastT;
  }

  /** The header line; the terminal's size as the client first said it, if it said it in time (among `events`). */
  header(who: CastIdentity, events: readonly PendingEvent[]): string {
    let size = { width: 80, height: 24 };
    for (const e of events) {
      const resize = e.code === 'client-text' ? resizeOf(e.data) : undefined;
      if (resize) {
        size = { width: resize.cols, height: resize.rows };
        break;
      }
    }
    return castHeaderLine({
      version: 2,
      width: size.width,
      height: size.height,
      timestamp: Math.floor(who.startedAt / 1000),
      title: `tether ${who.sessionId}: ${who.username} on ${who.deviceId}`,
      env: { TERM: 'xterm-256color' },
      tether: { session_id: who.sessionId, device_id: who.deviceId, user: who.username, input: who.recordInput },
    });
  }

  /** One event's line, or '' when it says nothing (an unknown text message, half a character). */
  line(e: PendingEvent): string {
    const t = Math.max(this.#lastT, (e.t - this.#startMono) / 1000);
    let code: CastCode;
    let data: string;
    switch (e.code) {
      case 'o':
      case 'i':
        code = e.code;
        data = this.#decoders[e.code].write(e.data);
        break;
      case 'client-text': {
        const size = resizeOf(e.data);
        if (!size) return '';
        code = 'r';
        data = `${size.cols}x${size.rows}`;
        break;
      }
      case 'device-text': {
        const exit = exitOf(e.data);
        if (exit === undefined) return '';
        code = 'm';
        data = `exit ${exit}`;
        break;
      }
      case 'm':
        code = 'm';
        data = e.data;
        break;
    }
    if (data === '') return '';
    this.#lastT = t;
    return castEventLine(t, code, data);
  }

  /**
   * A stream ended: what each direction's decoder holds back (half a UTF-8 sequence, which this
   * stream will not complete), and fresh decoders for the next stream.
   */
  endStream(): Array<{ code: 'o' | 'i'; rest: string }> {
    const rests: Array<{ code: 'o' | 'i'; rest: string }> = [];
    for (const code of ['o', 'i'] as const) {
      const rest = this.#decoders[code].end();
      if (rest) rests.push({ code, rest });
      this.#decoders[code] = new StringDecoder('utf8');
    }
    return rests;
  }
}

function jsonOf(text: Buffer): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text.toString('utf8')) as unknown;
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** A shell resize message's size (docs/session-streams.md), or undefined. */
function resizeOf(text: Buffer): { cols: number; rows: number } | undefined {
  const m = jsonOf(text);
  const { cols, rows } = m ?? {};
  if (m?.type !== 'resize' || !Number.isInteger(cols) || !Number.isInteger(rows)) return undefined;
  if ((cols as number) < 1 || (cols as number) > 1000 || (rows as number) < 1 || (rows as number) > 1000) return undefined;
  return { cols: cols as number, rows: rows as number };
}

/** A shell exit message's code, or undefined. */
function exitOf(text: Buffer): number | undefined {
  const m = jsonOf(text);
  return m?.type === 'exit' && Number.isInteger(m.code) ? (m.code as number) : undefined;
}
