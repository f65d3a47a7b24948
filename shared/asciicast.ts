/**
 * @module asciicast v2, the format of session recordings (docs.asciinema.org, asciicast v2): a
 * header line (a JSON object with `version: 2`, `width`, `height`, …), then one event per line,
 * `[seconds since the start, code, data]`, code `o` (output), `i` (input), `r` (resize,
 * `COLSxROWS`) or `m` (marker). Writing lines (the server's recorder), reading them back (the text
 * export, `tether session play`) and stripping terminal escapes for the text export live here.
 */

export interface CastHeader {
  version: 2;
  width: number;
  height: number;
  /** Unix seconds when the recording started. */
  timestamp?: number;
  title?: string;
  env?: Record<string, string>;
  [key: string]: unknown;
}

export type CastCode = 'o' | 'i' | 'r' | 'm';
export type CastEvent = [time: number, code: CastCode, data: string];

/** The header line, newline included. */
export const castHeaderLine = (header: CastHeader): string => `${JSON.stringify(header)}\n`;

/** One event line, newline included; times to the microsecond. */
export const castEventLine = (seconds: number, code: CastCode, data: string): string => `${JSON.stringify([Math.round(seconds * 1e6) / 1e6, code, data])}\n`;

/** An event line read back, or undefined when the line is not one (the header, garbage). */
export function parseCastEvent(line: string): CastEvent | undefined {
  if (!line.startsWith('[')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!Array.isArray(value) || value.length !== 3) return undefined;
  const [time, code, data] = value as unknown[];
  if (typeof time !== 'number' || !Number.isFinite(time) || typeof data !== 'string') return undefined;
  if (code !== 'o' && code !== 'i' && code !== 'r' && code !== 'm') return undefined;
  return [time, code, data];
}

/** The header line read back, or undefined when the line is not one. */
export function parseCastHeader(line: string): CastHeader | undefined {
  try {
    const value = JSON.parse(line) as Partial<CastHeader> | null;
    if (value && typeof value === 'object' && value.version === 2 && Number.isInteger(value.width) && Number.isInteger(value.height)) {
      return value as CastHeader;
    }
  } catch {
    // not a header
  }
  return undefined;
}

// ECMA-48: CSI (ESC [ or 0x9b … final byte), OSC/DCS/SOS/PM/APC strings (ended by BEL or ST),
// two-byte escapes (ESC and one more), and the C0/C1 controls other than tab and newline.
const ESCAPES =
  /(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[\s\S]*?(?:\x07|\x1b\\|\x9c|$)|\x1b[ -/]*[0-~]|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/**
 * The text a terminal showed, for reading and grep: escape sequences and control characters
 * removed, CR LF turned into LF. A carriage return that rewrote a line is kept as a line break,
 * so nothing printed is lost.
 */
export function stripTerminalEscapes(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(/\r/g, '\n').replace(ESCAPES, '');
}
