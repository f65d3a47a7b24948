/**
 * @module `tether shell DEVICE`: an interactive shell on the device. The local terminal goes
 * into raw mode (so Ctrl-C, Ctrl-D and friends reach the remote shell), window resizes are
 * forwarded, the terminal is restored on every way out, the session is closed when the shell
 * ends, and the command exits with the remote shell's exit code. The relay's notices (the session
 * expires soon) are printed on lines of their own.
 */
import type { Context } from '../context';
import { closeSession, openSession } from '../sessions';
import { explainClose, serverShutDown } from '../explain-close';
import { openStream } from '../stream';
import { parseTextFrame } from '../../shared/protocol/text-frame';
import { streamNotice } from '../../shared/protocol/session-stream';

const INPUT_HIGH_WATER = 1024 * 1024;

export interface ShellFlags {
  ttl?: number;
  replace?: boolean;
  waitOnline?: boolean;
}

export async function shell(ctx: Context, device: string, flags: ShellFlags): Promise<number> {
  const api = ctx.api();
  const session = await openSession(api, { device, protocol: 'shell', ...flags, notice: ctx.notice });
  const { stdin, stdout } = process;
  let restored = false;
  const wasRaw = stdin.isTTY ? stdin.isRaw : false;
  const restore = () => {
    if (restored) return;
    restored = true;
    if (stdin.isTTY) stdin.setRawMode(wasRaw);
    stdin.pause();
  };
  process.once('exit', restore); // whatever happens, the terminal comes back
  let serverGone = false;

  try {
    const stream = await openStream(session.websocket_url!);
    const ws = stream.ws;
    let exitCode: number | undefined;

    const sendResize = () => {
      if (stdout.isTTY) stream.resize(stdout.columns, stdout.rows);
    };
    if (stdin.isTTY) stdin.setRawMode(true);
    sendResize();
    stdout.on('resize', sendResize); // Node turns SIGWINCH into this event

    stdin.on('data', (data: Buffer) => {
      ws.send(data, () => {
        if (stdin.isPaused() && ws.bufferedAmount < INPUT_HIGH_WATER / 4 && !restored) stdin.resume();
      });
      if (ws.bufferedAmount > INPUT_HIGH_WATER) stdin.pause();
    });
    // Piped input that ends: the remote shell sees end-of-file, as a terminal's Ctrl-D would.
    stdin.once('end', () => ws.send(Buffer.from([4])));
    stdin.resume();

    stream.onBinary((data) => {
      if (!stdout.write(data)) {
        ws.pause();
        stdout.once('drain', () => ws.resume());
      }
    });
    stream.onShellExit((exit) => (exitCode = exit.code));
    // The broker's notices (the session expires soon): on the terminal, framed so raw mode does not garble them.
    ws.on('text', function shellOnNotice(text: string) {
      const notice = parseTextFrame(streamNotice, text);
      if (notice) ctx.notice(`\r\n[${notice.message}]\r`);
    });

    // Signals that still reach us (from outside, or Ctrl-C without a terminal): leave cleanly.
    let signalled: NodeJS.Signals | undefined;
    const onSignal = (signal: NodeJS.Signals) => {
      signalled ??= signal;
      ws.close(1000, 'client interrupted');
    };
    for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(s, onSignal);
    try {
      const { code, reason } = await stream.closed;
      serverGone = serverShutDown(code, reason);
      restore();
      stdout.off('resize', sendResize);
      if (exitCode !== undefined) return exitCode;
      if (signalled) return signalled === 'SIGINT' ? 130 : signalled === 'SIGTERM' ? 143 : 129;
      ctx.notice(`\r\ntether: ${explainClose(code, reason)}`);
      return 1;
    } finally {
      for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(s, onSignal);
    }
  } finally {
    restore();
    process.off('exit', restore);
    if (!serverGone) await closeSession(api, session.session_id).catch((err: Error) => ctx.notice(`tether: could not close the session: ${err.message}`));
  }
}
