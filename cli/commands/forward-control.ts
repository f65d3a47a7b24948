/**
 * @module What a `tether forward --stdio` process and its master (./forward-master) say to each
 * other over the master's Unix socket, one JSON object a line. A client opens two connections: a
 * control one (`hello`, then the master's news about its connection) and a data one (`attach`
 * with the key the master gave, then nothing but the connection's bytes both ways), so the bytes
 * are never framed and the master hands the data socket to the session's mux as it is.
 */
import type { Socket } from 'node:net';
import * as z from 'zod/mini';

/** The longest line either side sends; a longer one is a broken peer. */
export const MAX_LINE = 4096;

/** Client → master, the control connection's first line: a connection to `target`, please. */
const hello = z.object({ type: z.literal('hello'), target: z.string().check(z.maxLength(300)) });
/** Client → master, the data connection's first line: this is the connection `key` names. */
const attach = z.object({ type: z.literal('attach'), key: z.string().check(z.regex(/^[0-9a-f]{32}$/)) });
export const clientLine = z.discriminatedUnion('type', [hello, attach]);
export type ClientLine = z.infer<typeof clientLine>;

/** Master → client (control): the session is open; attach the data connection with `key`. */
const ready = z.object({ type: z.literal('ready'), key: z.string() });
/** Master → client: the device reached the target; bytes may flow. */
const opened = z.object({ type: z.literal('opened') });
/**
 * Master → client, last: the connection is over. `reset` when it did not end cleanly (its words
 * for a person), `lost` when the session's stream went away under it (the connection to tether).
 */
const closed = z.object({
  type: z.literal('closed'),
  reset: z.optional(z.string().check(z.maxLength(1000))),
  lost: z.optional(z.boolean()),
});
/** Master → client, last: no connection; `code` is the CLI's error code (`unreachable`, `conflict` …). */
const failed = z.object({ type: z.literal('error'), code: z.string().check(z.maxLength(64)), message: z.string().check(z.maxLength(4000)) });
export const masterLine = z.discriminatedUnion('type', [ready, opened, closed, failed]);
export type MasterLine = z.infer<typeof masterLine>;

export const sendLine = (socket: Socket, line: ClientLine | MasterLine): void => void socket.write(`${JSON.stringify(line)}\n`);

/**
 * Reads `socket` line by line into `onLine` (parsed with `schema`; undefined for a line that is
 * not one) until `onLine` returns 'stop': the socket is then paused, with the bytes after that
 * line put back for whoever reads it next. A line longer than MAX_LINE ends the socket.
 */
export function readLines<T>(socket: Socket, schema: z.ZodMiniType<T>, onLine: (line: T | undefined) => 'stop' | void): void {
  let buffered = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (let nl = buffered.indexOf(10); nl >= 0; nl = buffered.indexOf(10)) {
      const text = buffered.subarray(0, nl).toString('utf8');
      buffered = buffered.subarray(nl + 1);
      let parsed: T | undefined;
      try {
        const r = schema.safeParse(JSON.parse(text));
        parsed = r.success ? r.data : undefined;
      } catch {
        parsed = undefined;
      }
      if (onLine(parsed) === 'stop') {
        socket.off('data', onData);
        socket.pause();
        if (buffered.length > 0) socket.unshift(buffered);
        return;
      }
    }
    if (buffered.length > MAX_LINE) socket.destroy();
  };
  socket.on('data', onData);
}
