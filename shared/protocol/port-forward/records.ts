/**
 * @module Reads the data records of a port-forward stream (`./protocol`) out of its binary byte
 * stream, however the bytes are cut: each record's payload is handed on as the slices that
 * arrived, never copied or held whole. An 8-byte header split across chunks is the only thing
 * kept between them.
 */
import { MAX_RECORD, RECORD_HEADER_BYTES } from './protocol';

export interface RecordSink {
  /** The next bytes of connection `id`'s record (a slice of what arrived). */
  data(id: number, slice: Buffer): void;
  /** The stream broke the record format: a zero id, or a length of 0 or over MAX_RECORD. */
  invalid(why: string): void;
}

export function createRecordReader(sink: RecordSink) {
  const header = Buffer.alloc(RECORD_HEADER_BYTES);
  let headerHave = 0;
  let id = 0;
  let left = 0; // payload bytes of the current record still to come
  let broken = false;

  return {
    /** True while part of a record's payload has been read and the rest has not. */
    get midRecord(): boolean {
      return left > 0 || headerHave > 0;
    },
    push(chunk: Buffer): void {
      let at = 0;
      while (at < chunk.length && !broken) {
        if (left > 0) {
          const n = Math.min(left, chunk.length - at);
          left -= n;
          sink.data(id, chunk.subarray(at, at + n));
          at += n;
          continue;
        }
        const n = Math.min(RECORD_HEADER_BYTES - headerHave, chunk.length - at);
        chunk.copy(header, headerHave, at, at + n);
        headerHave += n;
        at += n;
        if (headerHave < RECORD_HEADER_BYTES) return;
        headerHave = 0;
        id = header.readUInt32BE(0);
        left = header.readUInt32BE(4);
        if (id === 0 || left === 0 || left > MAX_RECORD) {
          broken = true;
          sink.invalid(id === 0 ? 'a data record for connection 0' : `a data record of ${left} bytes (1 to ${MAX_RECORD})`);
        }
      }
    },
  };
}
