/**
 * @module The HTTP/1.1 side of the client's opening handshake, on a bare socket: writes the
 * upgrade request and reads the server's answer (its status line and headers, and a refusal's
 * body: Content-Length, chunked, or until the connection ends). Not `node:http`: loading it (and
 * the streams it brings) held about 0.2 MiB more heap in every idle agent (BENCHMARKS.md, "The
 * agent as one file", third round), for one request per connection.
 */

/** As `node:http`: the status line and headers of an answer fit in 16 KiB. */
const MAX_HEAD = 16 * 1024;
/** Header names (RFC 9110 tokens) and values (no control characters but tab) `node:http` accepts. */
const TOKEN = /^[\^_`a-zA-Z\-0-9!#$%&'*+.|~]+$/;
const INVALID_VALUE = /[^\t\x20-\x7e\x80-\xff]/;

/** The request line and headers of a GET asking `host` for an upgrade, as latin1 bytes (as `node:http` writes them). */
export function upgradeRequest(path: string, host: string, headers: ReadonlyArray<readonly [string, string]>): Buffer {
  let text = `GET ${path} HTTP/1.1\r\nHost: ${host}\r\n`;
  for (const [name, value] of headers) {
    // The checks `node:http` makes: a value with a line break would forge headers.
    if (!TOKEN.test(name)) throw Object.assign(new TypeError(`Header name must be a valid HTTP token ["${name}"]`), { code: 'ERR_INVALID_HTTP_TOKEN' });
    if (INVALID_VALUE.test(value)) throw Object.assign(new TypeError(`Invalid character in header content ["${name}"]`), { code: 'ERR_INVALID_CHAR' });
    text += `${name}: ${value}\r\n`;
  }
  return Buffer.from(`${text}\r\n`, 'latin1');
}

export interface AnswerHead {
  status: number;
  /** Lower-case names; a header sent twice is joined with ', '. */
  headers: Record<string, string>;
  /** The bytes after the head: the upgraded connection's first frames, or the start of a body. */
  rest: Buffer;
}

/** The answer's head once `buffer` holds all of it; undefined while it does not; throws on bytes that are not one. */
export function parseAnswerHead(buffer: Buffer): AnswerHead | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) {
    if (buffer.length > MAX_HEAD) throw parseError('HPE_HEADER_OVERFLOW', 'Header overflow');
    return undefined;
  }
  if (end > MAX_HEAD) throw parseError('HPE_HEADER_OVERFLOW', 'Header overflow');
  const [statusLine = '', ...lines] = buffer.toString('latin1', 0, end).split('\r\n');
  const status = /^HTTP\/1\.[01] ([1-9]\d\d)(?: .*)?$/.exec(statusLine)?.[1];
  if (!status) throw parseError('HPE_INVALID_CONSTANT', 'Expected HTTP/');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = line.slice(0, colon).toLowerCase();
    if (colon <= 0 || !TOKEN.test(name)) throw parseError('HPE_INVALID_HEADER_TOKEN', 'Invalid header token');
    const value = line.slice(colon + 1).trim();
    headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
  }
  return { status: Number(status), headers, rest: buffer.subarray(end + 4) };
}

/**
 * Collects a refusal's body, at most `max` bytes of it, as its bytes arrive: `push` says whether
 * the body is complete (its Content-Length reached, or the last chunk of a chunked one); a body
 * without either ends with the connection.
 */
export function createBodyReader(head: AnswerHead, max: number) {
  const chunks: Buffer[] = [];
  let kept = 0;
  const keep = (bytes: Buffer) => {
    if (kept >= max || bytes.length === 0) return;
    const part = bytes.subarray(0, max - kept);
    chunks.push(part);
    kept += part.length;
  };
  const chunked = /(^|,)\s*chunked\s*$/i.test(head.headers['transfer-encoding'] ?? '');
  const length = head.status === 204 || head.status === 304 ? 0 : Number(head.headers['content-length'] ?? NaN);
  /** Bytes of the body still to come (without a length: until the connection ends). */
  let remaining = !chunked && Number.isInteger(length) && length >= 0 ? length : Infinity;
  /** Chunked: undecoded bytes, kept only while a chunk's size line or the CRLF after its data is incomplete. */
  let pending: Buffer = Buffer.alloc(0);
  let step: 'size' | 'data' | 'crlf' = 'size';

  /** Reads chunks as far as `pending` goes, keeping their data; true after the last (zero-size) one. */
  function decodeChunks(): boolean {
    for (;;) {
      if (step === 'size') {
        const eol = pending.indexOf('\r\n');
        if (eol < 0 && pending.length > 1024) throw parseError('HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size');
        if (eol < 0) return false;
        const size = /^([0-9a-fA-F]{1,8})(;.*)?$/.exec(pending.toString('latin1', 0, eol))?.[1];
        if (size === undefined) throw parseError('HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size');
        pending = pending.subarray(eol + 2);
        remaining = parseInt(size, 16);
        if (remaining === 0) return true; // trailers are not read: the refusal is complete
        step = 'data';
      }
      if (step === 'data') {
        const data = pending.subarray(0, remaining);
        keep(data);
        remaining -= data.length;
        pending = pending.subarray(data.length);
        if (remaining > 0) return false;
        step = 'crlf';
      }
      if (pending.length < 2) return false;
      pending = pending.subarray(2);
      step = 'size';
    }
  }

  return {
    /** Takes the body's next bytes; true once it is complete. */
    push(bytes: Buffer): boolean {
      if (!chunked) {
        keep(bytes.subarray(0, remaining));
        remaining -= Math.min(bytes.length, remaining);
        return remaining === 0;
      }
      pending = pending.length > 0 ? Buffer.concat([pending, bytes]) : bytes;
      return decodeChunks();
    },
    /** What was kept of the body, as UTF-8 text. */
    get text(): string {
      return Buffer.concat(chunks).toString('utf8');
    },
  };
}

function parseError(code: string, reason: string): Error {
  return Object.assign(new Error(`Parse Error: ${reason}`), { code });
}
