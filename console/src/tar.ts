/**
 * @module Tar in the browser, for the files page: the headers of an upload (ustar, with a pax
 * record for a long name) and the reading of a download, both as streams of chunks. Only what a
 * file transfer needs: regular files, their names, modes and times.
 */

const BLOCK = 512;
const encoder = new TextEncoder();

function field(header: Uint8Array, at: number, length: number, text: string): void {
  header.set(encoder.encode(text).subarray(0, length), at);
}

function octal(header: Uint8Array, at: number, length: number, value: number): void {
  field(header, at, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
}

function header(name: string, size: number, mtime: number, type: '0' | 'x'): Uint8Array {
  const h = new Uint8Array(BLOCK);
  field(h, 0, 100, name);
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, Math.floor(mtime / 1000));
  field(h, 148, 8, '        '); // the checksum counts itself as spaces
  field(h, 156, 1, type);
  field(h, 257, 6, 'ustar\0');
  field(h, 263, 2, '00');
  let sum = 0;
  for (const b of h) sum += b;
  field(h, 148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  return h;
}

const padding = (size: number) => new Uint8Array((BLOCK - (size % BLOCK)) % BLOCK);

/** The blocks before a file's content: a pax record first when its name does not fit ustar. */
export function fileHeader(name: string, size: number, mtime: number): Uint8Array[] {
  const bytes = encoder.encode(name);
  if (bytes.length < 100) return [header(name, size, mtime, '0')];
  // "LEN path=NAME\n", LEN counting its own digits
  const bodyLength = encoder.encode(` path=${name}\n`).length;
  let len = bodyLength + 1;
  while (String(len).length + bodyLength !== len) len = String(len).length + bodyLength;
  const record = encoder.encode(`${len} path=${name}\n`);
  return [header('PaxHeader', record.length, mtime, 'x'), record, padding(record.length), header('pax-long-name', size, mtime, '0')];
}

export const filePadding = padding;
/** Two zero blocks end an archive. */
export const END_OF_ARCHIVE = new Uint8Array(BLOCK * 2);

/**
 * Reads a tar stream chunk by chunk, handing each regular file's content on as it arrives. The
 * agent sends one tar per download (docs/session-streams.md).
 */
export function tarReader(onFile: (name: string, size: number) => void, onData: (chunk: Uint8Array) => void) {
  let head: Uint8Array = new Uint8Array(0);
  let left = 0; // content bytes of the current entry still to come
  let pad = 0;
  let regular = false;
  let paxPath: string | undefined;
  let paxBody: Uint8Array[] | undefined;
  const decoder = new TextDecoder();
  const text = (h: Uint8Array, at: number, length: number) => decoder.decode(h.subarray(at, at + length)).replace(/\0.*$/s, '');
  return {
    push(chunk: Uint8Array): void {
      let at = 0;
      while (at < chunk.length) {
        if (left > 0) {
          const n = Math.min(left, chunk.length - at);
          const part = chunk.subarray(at, at + n);
          if (paxBody) paxBody.push(part.slice());
          else if (regular) onData(part);
          left -= n;
          at += n;
          if (left === 0 && paxBody) {
            const body = decoder.decode(concat(paxBody));
            paxPath = /\d+ path=(.*)\n/.exec(body)?.[1];
            paxBody = undefined;
          }
          continue;
        }
        if (pad > 0) {
          const n = Math.min(pad, chunk.length - at);
          pad -= n;
          at += n;
          continue;
        }
        const need = BLOCK - head.length;
        head = concat([head, chunk.subarray(at, at + need)]);
        at += Math.min(need, chunk.length - at);
        if (head.length < BLOCK) return;
        const h = head;
        head = new Uint8Array(0);
        if (h.every((b) => b === 0)) continue; // end-of-archive blocks
        const size = parseInt(text(h, 124, 12).trim() || '0', 8);
        const type = String.fromCharCode(h[156]!);
        const prefix = text(h, 345, 155);
        const name = paxPath ?? (prefix ? `${prefix}/${text(h, 0, 100)}` : text(h, 0, 100));
        left = size;
        pad = (BLOCK - (size % BLOCK)) % BLOCK;
        regular = type === '0' || type === '\0';
        if (type === 'x') paxBody = [];
        else paxPath = undefined;
        if (regular) onFile(name, size);
        if (size === 0) {
          left = 0;
        }
      }
    },
  };
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
