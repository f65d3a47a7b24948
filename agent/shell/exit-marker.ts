/**
 * @module The shell's exit marker. Linux may drop the last kilobytes a PTY holds once its slave
 * side closes (microsoft/node-pty#72, #726), so the shell does not run alone: a wrapper runs it,
 * then prints `ESC ] tether-exit;<nonce>;<code> BEL` and keeps the terminal open. Everything the
 * shell wrote precedes the marker in the stream, so once the marker is read, all output has
 * been; the agent then sends the exit code and ends the wrapper. The nonce is random per shell,
 * so output that merely looks like a marker cannot end a session.
 */

const PREFIX = '\x1b]tether-exit;';
const ESC = 0x1b;
const BEL = 0x07;
const NOTHING = Buffer.alloc(0);
const MAX_MARKER = PREFIX.length + 64;

/**
 * The wrapper script: `$0` is the login shell, `TETHER_EXIT_NONCE` the nonce. The wrapper keeps
 * the nonce in a variable of its own and unsets it before it starts the shell: the shell's
 * environment holds no `TETHER_*` variable (`shell-env.ts`), and the nonce shows in no `ps`.
 */
export const WRAPPER_SCRIPT =
  'n=$TETHER_EXIT_NONCE; unset TETHER_EXIT_NONCE; "$0" -l; c=$?; printf \'\\033]tether-exit;%s;%d\\007\' "$n" "$c"; exec sleep 3600';

export interface ScanResult {
  /** Output to forward (the marker and anything after it removed). */
  output: Buffer;
  /** The shell's exit code, once the marker was seen. */
  exitCode?: number;
}

/** Finds the marker in a byte stream split into arbitrary chunks. */
export class ExitMarkerScanner {
  #held = NOTHING;
  #marker: Buffer;
  #done = false;

  constructor(nonce: string) {
    this.#marker = Buffer.from(`${PREFIX}${nonce};`);
  }

  push(chunk: Buffer): ScanResult {
    if (this.#done) return { output: NOTHING };
    // Most output (every keystroke's echo) holds no ESC: no marker starts in it and nothing is held
    // back. Passed on as it is, it costs no allocation (scavenges in the agent show in the echo's p99).
    if (this.#held.length === 0 && chunk.indexOf(ESC) < 0) return { output: chunk };
    const data = this.#held.length ? Buffer.concat([this.#held, chunk]) : chunk;
    this.#held = NOTHING;
    const at = data.indexOf(this.#marker);
    if (at >= 0) {
      const end = data.indexOf(BEL, at + this.#marker.length);
      if (end >= 0) {
        const code = Number(data.subarray(at + this.#marker.length, end).toString('latin1'));
        this.#done = true;
        return { output: data.subarray(0, at), exitCode: Number.isInteger(code) ? code : 1 };
      }
      if (data.length - at <= MAX_MARKER) {
        this.#held = Buffer.from(data.subarray(at));
        return { output: data.subarray(0, at) };
      }
    }
    // Hold back a tail that could be the start of a marker split across chunks.
    const keep = this.#partialPrefixLength(data);
    this.#held = keep === 0 ? NOTHING : Buffer.from(data.subarray(data.length - keep));
    return { output: data.subarray(0, data.length - keep) };
  }

  /** Anything held back when the stream ends without a marker. */
  flush(): Buffer {
    const rest = this.#held;
    this.#held = NOTHING;
    return rest;
  }

  #partialPrefixLength(data: Buffer): number {
    const max = Math.min(this.#marker.length - 1, data.length);
    for (let n = max; n > 0; n--) {
      if (data.subarray(data.length - n).equals(this.#marker.subarray(0, n))) return n;
    }
    return 0;
  }
}
