/**
 * @module The soak test's shells: a shell session whose shell is `cat`, known to be so once a
 * typed line comes back twice (the terminal's echo, then cat's); then a numbered line every 100 ms,
 * each awaited back, until the time is up.
 */
import type { ServerProcess } from './lib';
import { Client, closeAndCheck, openSession, type Tally } from './soak-client';

const ECHO_EVERY_MS = 100;

export interface ReadyShell {
  deviceId: string;
  sessionId: string;
  client: Client;
  token: string;
  awaitText(needle: string, timeoutMs: number, times?: number): Promise<void>;
}

/** Opens a shell session and runs `exec cat` in it; resolves once a line comes back through cat. */
export async function prepareShell(server: ServerProcess, token: string, deviceId: string): Promise<ReadyShell> {
  const what = `shell on ${deviceId}`;
  const session = await openSession(server, token, deviceId, 'shell');
  const client = new Client(session.websocket_url);
  client.onBinary = (d) => {
    client.text += d.toString('latin1');
    if (client.text.length > 64 * 1024) client.text = client.text.slice(-4096);
  };
  /** Waits until `needle` was seen `times` times (a typed line: the terminal's echo, then cat's). */
  const awaitText = async (needle: string, timeoutMs: number, times = 1) => {
    const deadline = performance.now() + timeoutMs;
    while (client.text.split(needle).length - 1 < times) {
      if (performance.now() > deadline) {
        throw new Error(`${what}: no echo of ${JSON.stringify(needle)} within ${timeoutMs} ms; got ${JSON.stringify(client.text.slice(-160))}`);
      }
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  await client.opened();
  await client.send(Buffer.from('exec cat\n'));
  await awaitText('exec cat', 60_000);
  // A line typed before cat runs comes back once only (while the shell still held the terminal,
  // nothing echoed it): wait for a line seen twice, the terminal's echo and cat's, typing a new
  // one each time the last came back once, so the shell is known to be cat.
  const deadline = performance.now() + 60_000;
  for (let attempt = 0; ; attempt++) {
    const line = `${deviceId}-ready-${attempt}`;
    await client.send(Buffer.from(`${line}\n`));
    try {
      await awaitText(`${line}\r\n`, 2_000, 2);
      break;
    } catch (err) {
      if (performance.now() > deadline) throw err;
    }
  }
  return { deviceId, sessionId: session.session_id, client, token, awaitText };
}

/** A numbered line every 100 ms until `until`, each awaited back; then the session is checked. */
export async function echoUntil(server: ServerProcess, shell: ReadyShell, until: number, tally: Tally): Promise<void> {
  try {
    for (let n = 0; Date.now() < until; n++) {
      const line = `${shell.deviceId}-echo-${n}`;
      const t0 = performance.now();
      await shell.client.send(Buffer.from(`${line}\n`));
      await shell.awaitText(`${line}\r\n`, 10_000, 2);
      tally.echoMicros.push((performance.now() - t0) * 1000);
      tally.echoes++;
      await new Promise((r) => setTimeout(r, ECHO_EVERY_MS));
    }
  } catch (err) {
    tally.fail((err as Error).message);
  }
  await closeAndCheck(server, shell.token, shell.sessionId, shell.client, `shell on ${shell.deviceId}`, tally);
}
