/**
 * @module How a recording's queued events become asciicast v2 (`shared/asciicast.ts`): the header,
 * with the terminal size the client first said, and one line per event, its time in seconds since
 * the start by the monotonic clock and never running backwards. UTF-8 sequences split across
 * frames are carried over to the next batch (a StringDecoder per direction, and one for an exec
 * stream's stderr). An exec stream (docs/session-streams.md, exec) is recorded as a terminal would
 * show it: its stderr as output beside its stdout, and its command line as a marker once the
 * device says the command runs.
 */
import { StringDecoder } from 'node:string_decoder';
import { castEventLine, castHeaderLine, type CastCode } from '../../shared/asciicast';
import { MAX_TEXT } from './frame-messages';

/** What the taps queue: a timestamp from the monotonic clock and what passed. */
export type PendingEvent =
  | { t: number; code: 'o' | 'i'; data: Buffer }
  /** A text message from the client (resize, exec) or the device (exit, stderr, exec.started). */
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
  #decoders = { o: new StringDecoder('utf8'), i: new StringDecoder('utf8'), e: new StringDecoder('utf8') };
  #lastT = 0;
  /** The command line the client asked this stream to run, until the device says it runs. */
  #execLine: string | undefined;

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
        if (!size) {
          this.#execLine = execLineOf(e.data) ?? this.#execLine;
          return '';
        }
        code = 'r';
        data = `${size.cols}x${size.rows}`;
        break;
      }
      case 'device-text': {
        const m = jsonOf(e.data);
        const exit = exitOf(m);
        if (exit !== undefined) [code, data] = ['m', `exit ${exit}`];
        else if (m?.type === 'stderr' && typeof m.data === 'string') [code, data] = ['o', this.#decoders.e.write(Buffer.from(m.data, 'base64'))];
        else if (m?.type === 'exec.started' && this.#execLine !== undefined) [code, data] = ['m', this.#execLine];
        else return '';
        if (m?.type === 'exec.started') this.#execLine = undefined;
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
    for (const code of ['o', 'i', 'e'] as const) {
      const rest = this.#decoders[code].end();
      if (rest) rests.push({ code: code === 'e' ? 'o' : code, rest });
      this.#decoders[code] = new StringDecoder('utf8');
    }
    this.#execLine = undefined;
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
function exitOf(m: Record<string, unknown> | undefined): number | undefined {
  return m?.type === 'exit' && Number.isInteger(m.code) ? (m.code as number) : undefined;
}

/** A word as a POSIX shell reads it back: bare when that is safe, else in single quotes. */
const shellWord = (word: string): string => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`);

/**
 * The marker of an exec request (`exec ARGV…`, quoted as a shell would take it), or undefined when
 * the message is none. A request over a recorder's message size arrives cut (./frame-messages):
 * it is named, its command line is not.
 */
function execLineOf(text: Buffer): string | undefined {
  const m = jsonOf(text);
  if (m === undefined)
    return text.length === MAX_TEXT && /^\s*\{\s*"type"\s*:\s*"exec"/.test(text.toString('latin1', 0, 64)) ? 'exec (a command line over 4 KiB)' : undefined;
  if (m.type !== 'exec' || !Array.isArray(m.argv) || m.argv.length === 0 || !m.argv.every((a) => typeof a === 'string')) return undefined;
  return `exec ${(m.argv as string[]).map(shellWord).join(' ')}`;
}
