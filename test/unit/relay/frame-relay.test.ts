/** The streaming frame forwarder: every split of the input gives the same frames out, unmasked. */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createFrameForwarder, OPCODE, type ControlFrame, type FrameErrorKind } from '../../../relay/frame-relay';
import { encodeFrame } from '../../helpers/raw-ws';

interface Frame {
  fin: boolean;
  opcode: number;
  payload: Buffer;
}

interface FrameSpec extends Frame {
  /** Masking key; `null` for an unmasked frame. */
  key: Buffer | null;
  rsv?: number;
  /** Forces a longer length encoding than needed (7, 16 or 64 bits). */
  lengthBits?: 16 | 64;
  /** Raw value of the 64-bit length, for the malformed-length case. */
  rawLength64?: bigint;
}

const ZERO_KEY = Buffer.alloc(4);

/** Encodes one frame as a peer would send it. */
function encode(spec: FrameSpec): Buffer {
  const { key, rawLength64, lengthBits } = spec;
  return encodeFrame({
    fin: spec.fin,
    rsv: spec.rsv,
    opcode: spec.opcode,
    payload: spec.payload,
    masked: key !== null,
    ...(key ? { key } : {}),
    ...(rawLength64 !== undefined ? { lengthForm: 64, declaredLength: rawLength64 } : lengthBits ? { lengthForm: lengthBits } : {}),
  });
}

/** An independent, strict decoder of what the relay sends: unmasked frames, minimal lengths. */
function decodeUnmasked(bytes: Buffer): Frame[] {
  const frames: Frame[] = [];
  let pos = 0;
  while (pos < bytes.length) {
    const b0 = bytes[pos];
    const b1 = bytes[pos + 1];
    if ((b0 & 0x70) !== 0 || (b1 & 0x80) !== 0) throw new Error(`RSV or mask bit set at ${pos}`);
    let length = b1 & 0x7f;
    pos += 2;
    if (length === 126) {
      length = bytes.readUInt16BE(pos);
      if (length < 126) throw new Error('16-bit length for a short frame');
      pos += 2;
    } else if (length === 127) {
      length = Number(bytes.readBigUInt64BE(pos));
      if (length < 0x10000) throw new Error('64-bit length for a short frame');
      pos += 8;
    }
    if (pos + length > bytes.length) throw new Error('truncated frame');
    frames.push({ fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload: Buffer.from(bytes.subarray(pos, pos + length)) });
    pos += length;
  }
  return frames;
}

interface Run {
  out: Buffer;
  chunks: Buffer[];
  controls: ControlFrame[];
  errors: Array<{ code: number; kind: FrameErrorKind }>;
  payloadBytes: number;
}

/** Feeds `input` (a fresh copy: payloads are unmasked in place) in pieces cut at `cuts`. */
function run(input: Buffer, cuts: number[], opts: { expectMasked?: boolean; maxPayload?: number } = {}): Run {
  const result: Run = { out: Buffer.alloc(0), chunks: [], controls: [], errors: [], payloadBytes: 0 };
  const forwarder = createFrameForwarder({
    expectMasked: opts.expectMasked ?? true,
    maxPayload: opts.maxPayload ?? Infinity,
    onData: (chunk) => result.chunks.push(chunk),
    onControl: (frame) => result.controls.push({ opcode: frame.opcode, payload: Buffer.from(frame.payload) }),
    onProtocolError: (code, _reason, kind) => result.errors.push({ code, kind }),
    onPayloadBytes: (n) => (result.payloadBytes += n),
  });
  const copy = Buffer.from(input);
  let from = 0;
  for (const cut of [...cuts].sort((x, y) => x - y).concat(copy.length)) {
    forwarder.push(copy.subarray(from, cut));
    from = cut;
  }
  result.out = Buffer.concat(result.chunks);
  return result;
}

const dataFrames = (specs: FrameSpec[]): Frame[] => specs.filter((s) => s.opcode < 8).map(({ fin, opcode, payload }) => ({ fin, opcode, payload }));
const controlFrames = (specs: FrameSpec[]): ControlFrame[] =>
  specs.filter((s) => s.opcode >= 8).map(({ opcode, payload }) => ({ opcode, payload }) as ControlFrame);
const dataBytes = (specs: FrameSpec[]): number => dataFrames(specs).reduce((n, f) => n + f.payload.length, 0);

/** Frames with hex payloads: deep equality on large Buffers is slow. */
const printable = (frames: Frame[]) => frames.map((f) => ({ ...f, payload: f.payload.toString('hex') }));

function expectForwarded(result: Run, specs: FrameSpec[]): void {
  expect(result.errors).toEqual([]);
  expect(printable(decodeUnmasked(result.out))).toEqual(printable(dataFrames(specs)));
  expect(result.controls).toEqual(controlFrames(specs));
  expect(result.payloadBytes).toBe(dataBytes(specs));
}

const bytes = (n: number): Buffer => randomBytes(n);

/** A short stream with everything: both key kinds, a fragmented message with pings inside, an empty frame. */
const SMALL: FrameSpec[] = [
  { fin: true, opcode: OPCODE.text, payload: Buffer.from('héllo'), key: randomBytes(4) },
  { fin: false, opcode: OPCODE.binary, payload: bytes(7), key: ZERO_KEY },
  { fin: true, opcode: OPCODE.ping, payload: Buffer.from('p'), key: randomBytes(4) },
  { fin: false, opcode: OPCODE.continuation, payload: Buffer.alloc(0), key: randomBytes(4) },
  { fin: true, opcode: OPCODE.pong, payload: Buffer.alloc(0), key: ZERO_KEY },
  { fin: true, opcode: OPCODE.continuation, payload: bytes(5), key: randomBytes(4) },
  { fin: true, opcode: OPCODE.binary, payload: bytes(3), key: randomBytes(4), lengthBits: 16 },
  { fin: true, opcode: OPCODE.binary, payload: bytes(2), key: randomBytes(4), lengthBits: 64 },
];

describe('frame forwarder', () => {
  it('forwards the same frames whatever the split: at every point, and byte by byte', () => {
    const input = Buffer.concat(SMALL.map(encode));
    for (let i = 0; i <= input.length; i++) expectForwarded(run(input, [i]), SMALL);
    for (let i = 1; i < input.length; i += 3) {
      for (let j = i; j < input.length; j++) expectForwarded(run(input, [i, j]), SMALL);
    }
    expectForwarded(
      run(
        input,
        Array.from({ length: input.length }, (_, i) => i),
      ),
      SMALL,
    );
  });

  it('forwards random streams of all length encodings under random splits', () => {
    const key = fc.oneof(
      fc.constant(ZERO_KEY),
      fc.uint8Array({ minLength: 4, maxLength: 4 }).map((k) => Buffer.from(k)),
    );
    const size = fc.oneof(fc.integer({ min: 0, max: 125 }), fc.integer({ min: 126, max: 70_000 }));
    const message = fc.record({
      opcode: fc.constantFrom(OPCODE.text, OPCODE.binary),
      sizes: fc.array(size, { minLength: 1, maxLength: 3 }),
      keys: fc.array(key, { minLength: 3, maxLength: 3 }),
      ping: fc.option(fc.integer({ min: 0, max: 125 })),
    });
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 4 }),
        fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 40 }),
        (messages, cutPoints) => {
          const specs: FrameSpec[] = [];
          for (const m of messages) {
            m.sizes.forEach((n, i) => {
              const last = i === m.sizes.length - 1;
              specs.push({ fin: last, opcode: i === 0 ? m.opcode : OPCODE.continuation, payload: bytes(n), key: m.keys[i] });
              if (i === 0 && m.ping !== null) specs.push({ fin: true, opcode: OPCODE.ping, payload: bytes(m.ping), key: m.keys[2] });
            });
          }
          const input = Buffer.concat(specs.map(encode));
          expectForwarded(
            run(
              input,
              cutPoints.map((p) => Math.floor(p * input.length)),
            ),
            specs,
          );
        },
      ),
      { numRuns: 150 },
    );
  });

  it('passes large payloads through as slices of the input, unmasked in place', () => {
    for (const key of [ZERO_KEY, randomBytes(4)]) {
      const payload = bytes(200_000);
      const input = encode({ fin: true, opcode: OPCODE.binary, payload, key });
      const chunks: Buffer[] = [];
      const forwarder = createFrameForwarder({
        expectMasked: true,
        maxPayload: Infinity,
        onData: (chunk) => chunks.push(chunk),
        onControl: () => {},
        onProtocolError: () => {},
        onPayloadBytes: () => {},
      });
      forwarder.push(input.subarray(0, 70_000));
      forwarder.push(input.subarray(70_000));
      const [header, ...slices] = chunks;
      expect(header.length).toBe(10);
      expect(slices).toHaveLength(2);
      for (const slice of slices) expect(slice.buffer).toBe(input.buffer);
      expect(Buffer.concat(slices).equals(payload)).toBe(true);
    }
  });

  it('stops reading after a close frame, which it hands over whole', () => {
    const close = Buffer.concat([Buffer.from([0x03, 0xe8]), Buffer.from('bye')]);
    const specs: FrameSpec[] = [{ fin: true, opcode: OPCODE.close, payload: close, key: randomBytes(4) }];
    const input = Buffer.concat([encode(specs[0]), encode({ fin: true, opcode: OPCODE.binary, payload: bytes(4), key: ZERO_KEY })]);
    for (let i = 0; i <= input.length; i++) expectForwarded(run(input, [i]), specs);
  });

  const k = (): Buffer => randomBytes(4);
  const cases: Array<[string, FrameSpec[], FrameErrorKind, number, { expectMasked?: boolean; maxPayload?: number }?]> = [
    ['an RSV bit', [{ fin: true, opcode: OPCODE.binary, payload: bytes(3), key: k(), rsv: 4 }], 'RSV_SET', 1002],
    ['a reserved data opcode', [{ fin: true, opcode: 0x3, payload: bytes(3), key: k() }], 'BAD_OPCODE', 1002],
    ['a reserved control opcode', [{ fin: true, opcode: 0xb, payload: bytes(3), key: k() }], 'BAD_OPCODE', 1002],
    ['an unmasked frame from a client', [{ fin: true, opcode: OPCODE.binary, payload: bytes(3), key: null }], 'MASK_REQUIRED', 1002],
    ['a masked frame from a server', [{ fin: true, opcode: OPCODE.binary, payload: bytes(3), key: ZERO_KEY }], 'MASK_FORBIDDEN', 1002, { expectMasked: false }],
    ['a fragmented ping', [{ fin: false, opcode: OPCODE.ping, payload: bytes(3), key: k() }], 'CONTROL_FRAGMENTED', 1002],
    ['a 126-byte ping', [{ fin: true, opcode: OPCODE.ping, payload: bytes(126), key: k() }], 'CONTROL_TOO_LONG', 1002],
    ['a 1-byte close', [{ fin: true, opcode: OPCODE.close, payload: bytes(1), key: k() }], 'BAD_CLOSE_PAYLOAD', 1002],
    [
      'a 64-bit length with its top bit set',
      [{ fin: true, opcode: OPCODE.binary, payload: bytes(0), key: k(), rawLength64: 1n << 63n }],
      'LENGTH_MSB_SET',
      1002,
    ],
    ['a length past 2^53', [{ fin: true, opcode: OPCODE.binary, payload: bytes(0), key: k(), rawLength64: 1n << 60n }], 'TOO_BIG', 1009],
    ['a continuation with no message', [{ fin: true, opcode: OPCODE.continuation, payload: bytes(3), key: k() }], 'UNEXPECTED_CONTINUATION', 1002],
    [
      'a new message inside a fragmented one',
      [
        { fin: false, opcode: OPCODE.text, payload: bytes(3), key: k() },
        { fin: true, opcode: OPCODE.binary, payload: bytes(3), key: k() },
      ],
      'UNFINISHED_MESSAGE',
      1002,
    ],
    ['a frame over maxPayload', [{ fin: true, opcode: OPCODE.binary, payload: bytes(11), key: k() }], 'TOO_BIG', 1009, { maxPayload: 10 }],
    [
      'a fragmented message over maxPayload',
      [
        { fin: false, opcode: OPCODE.binary, payload: bytes(6), key: k() },
        { fin: true, opcode: OPCODE.continuation, payload: bytes(5), key: k() },
      ],
      'TOO_BIG',
      1009,
      { maxPayload: 10 },
    ],
  ];

  it.each(cases)('refuses %s at every split, forwarding nothing of the bad frame', (_name, specs, kind, code, opts) => {
    const good: FrameSpec = { fin: true, opcode: OPCODE.binary, payload: Buffer.from('ok'), key: ZERO_KEY };
    const masked = opts?.expectMasked === false;
    const lead = masked ? { ...good, key: null } : good;
    const input = Buffer.concat([encode(lead), ...specs.map(encode), encode(lead)]);
    // What may go through: the leading frame, and fragments before the bad frame.
    const before = [lead, ...specs.slice(0, -1)];
    for (let i = 0; i <= input.length; i++) {
      const result = run(input, [i], opts);
      expect(result.errors).toEqual([{ code, kind }]);
      expect(printable(decodeUnmasked(result.out))).toEqual(printable(dataFrames(before)));
    }
  });
});
