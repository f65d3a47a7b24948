/** The port-forward record reader (shared/protocol/port-forward/records.ts): any cut of the byte stream yields the same payloads, without copies. */
import { describe, expect, it } from 'vitest';
import { MAX_RECORD, recordHeader } from '../../../../../shared/protocol/port-forward/protocol';
import { createRecordReader } from '../../../../../shared/protocol/port-forward/records';

const record = (id: number, payload: Buffer) => Buffer.concat([recordHeader(id, payload.length), payload]);

function read(chunks: Buffer[]) {
  const got = new Map<number, Buffer[]>();
  const invalid: string[] = [];
  const reader = createRecordReader({
    data: (id, slice) => got.set(id, [...(got.get(id) ?? []), slice]),
    invalid: (why) => invalid.push(why),
  });
  for (const c of chunks) reader.push(c);
  return { got: new Map([...got].map(([id, parts]) => [id, Buffer.concat(parts).toString()])), invalid, pieces: got };
}

describe('the record reader', () => {
  const stream = Buffer.concat([
    record(1, Buffer.from('hello')),
    record(7, Buffer.from('x')),
    record(1, Buffer.from(' world')),
    record(0xffffffff, Buffer.from('top')),
  ]);
  const expected = new Map([
    [1, 'hello world'],
    [7, 'x'],
    [0xffffffff, 'top'],
  ]);

  it('yields the same payloads wherever the stream is cut, at every byte and in one piece', () => {
    expect(read([stream]).got).toEqual(expected);
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(read([stream.subarray(0, cut), stream.subarray(cut)]).got, `cut at ${cut}`).toEqual(expected);
    }
    expect(read([...stream].map((b) => Buffer.from([b]))).got).toEqual(expected); // a byte at a time
  });

  it('hands on slices of what arrived, never copies', () => {
    const big = Buffer.alloc(1000, 9);
    const chunk = record(3, big);
    const { pieces } = read([chunk]);
    expect(pieces.get(3)![0]!.buffer).toBe(chunk.buffer);
  });

  it('stops at a record for connection 0, or of 0 bytes or more than the largest', () => {
    expect(read([record(0, Buffer.from('x'))]).invalid).toEqual(['a data record for connection 0']);
    expect(read([recordHeader(1, 0)]).invalid).toEqual([`a data record of 0 bytes (1 to ${MAX_RECORD})`]);
    const tooBig = read([recordHeader(1, MAX_RECORD + 1), record(2, Buffer.from('after'))]);
    expect(tooBig.invalid).toHaveLength(1);
    expect(tooBig.got.size).toBe(0); // nothing after the broken record is read
  });
});
