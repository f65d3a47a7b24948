/**
 * @module The bits of RFC 6455 §5.2 our frame readers and writers share: opcodes, frame headers
 * (unmasked as a server sends them, masked as a client does; minimal length encoding, §5.1–§5.2),
 * in-place unmasking that can resume mid-key (§5.3), and the catalogue of protocol errors with
 * their close codes (§7.4.1: 1002 protocol error, 1009 message too big).
 */

export const OPCODE = { continuation: 0x0, text: 0x1, binary: 0x2, close: 0x8, ping: 0x9, pong: 0xa } as const;

/** §5.5: control frames carry at most 125 payload bytes and are never fragmented. */
export const MAX_CONTROL_PAYLOAD = 125;

export type ControlOpcode = typeof OPCODE.close | typeof OPCODE.ping | typeof OPCODE.pong;

export const isControlOpcode = (opcode: number): opcode is ControlOpcode => opcode === OPCODE.close || opcode === OPCODE.ping || opcode === OPCODE.pong;

export const isDataOpcode = (opcode: number): boolean => opcode === OPCODE.continuation || opcode === OPCODE.text || opcode === OPCODE.binary;

/** Every way a peer can break the framing rules, with the close code to answer it with. */
export const FRAME_ERRORS = {
  RSV_SET: { code: 1002, reason: 'RSV bits must be 0' },
  BAD_OPCODE: { code: 1002, reason: 'reserved opcode' },
  MASK_REQUIRED: { code: 1002, reason: 'frames must be masked' },
  MASK_FORBIDDEN: { code: 1002, reason: 'frames must not be masked' },
  CONTROL_FRAGMENTED: { code: 1002, reason: 'control frame must not be fragmented' },
  CONTROL_TOO_LONG: { code: 1002, reason: 'control frame payload over 125 bytes' },
  LENGTH_MSB_SET: { code: 1002, reason: '64-bit payload length with the top bit set' },
  UNEXPECTED_CONTINUATION: { code: 1002, reason: 'continuation frame without a message to continue' },
  UNFINISHED_MESSAGE: { code: 1002, reason: 'new message before the previous one finished' },
  BAD_CLOSE_PAYLOAD: { code: 1002, reason: 'close frame payload of 1 byte' },
  TOO_BIG: { code: 1009, reason: 'message too big' },
} as const;

export type FrameErrorKind = keyof typeof FRAME_ERRORS;

/**
 * The header of a data frame for the outgoing hop: FIN and opcode kept, RSV 0, no mask (the
 * relay is the server of both hops, §5.1), length in the fewest bytes (§5.2).
 */
export function encodeUnmaskedHeader(fin: boolean, opcode: number, length: number): Buffer {
  const first = (fin ? 0x80 : 0) | opcode;
  if (length < 126) return Buffer.from([first, length]);
  if (length < 0x10000) {
    const header = Buffer.allocUnsafe(4);
    header[0] = first;
    header[1] = 126;
    header.writeUInt16BE(length, 2);
    return header;
  }
  const header = Buffer.allocUnsafe(10);
  header[0] = first;
  header[1] = 127;
  header.writeUInt32BE(Math.floor(length / 2 ** 32), 2);
  header.writeUInt32BE(length >>> 0, 6);
  return header;
}

/** A client's header (§5.1: clients mask): the unmasked header with the mask bit and `key` added. */
export function encodeMaskedHeader(fin: boolean, opcode: number, length: number, key: Buffer): Buffer {
  const bare = encodeUnmaskedHeader(fin, opcode, length);
  const header = Buffer.allocUnsafe(bare.length + 4);
  bare.copy(header);
  header[1] |= 0x80;
  key.copy(header, bare.length, 0, 4);
  return header;
}

/**
 * XORs `data` with `key` in place, starting at byte `offset` of the frame's payload (§5.3:
 * octet i is XORed with key[i mod 4]), so a payload split across reads unmasks piece by piece.
 */
export function unmaskInPlace(data: Buffer, key: Buffer, offset: number): void {
  for (let i = 0; i < data.length; i++) data[i] ^= key[(offset + i) & 3];
}
