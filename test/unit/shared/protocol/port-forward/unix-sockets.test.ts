/**
 * The port-forward mux carrying Unix sockets, as the `forward --stdio` master does
 * (cli/commands/forward-master.ts), with real sockets: a connection whose socket has already
 * ended, with nothing to send, when the device answers `opened` still sends its `end` (a
 * half-close arriving before the open completed was lost, and the connection ended in a reset);
 * and a Unix socket, which has no TCP reset, is cut without throwing when the stream ends.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ForwardMux } from '../../../../../shared/protocol/port-forward/mux';
import type { ForwardMessage } from '../../../../../shared/protocol/port-forward/protocol';
import { tempDir } from '../../../../helpers/temp';
import { waitFor } from '../../../../helpers/wait';

const servers: Server[] = [];
const clients: Socket[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.destroy();
  for (const s of servers.splice(0)) s.close();
});

/** A connected pair of Unix sockets: the server's end (what the master hands the mux) and the client's. */
async function unixPair(): Promise<{ ours: Socket; theirs: Socket }> {
  const path = join(tempDir(), 's.sock');
  const accepted = new Promise<Socket>((resolve) => {
    const server = createServer({ allowHalfOpen: true }, resolve);
    servers.push(server);
    server.listen(path);
  });
  await new Promise((r) => servers.at(-1)!.once('listening', r));
  const theirs = connect(path);
  theirs.on('error', () => {});
  clients.push(theirs);
  const ours = await accepted;
  return { ours, theirs };
}

function clientMux() {
  const sent: ForwardMessage[] = [];
  const mux = new ForwardMux({ buffered: 0, sendMessage: (m) => sent.push(m), sendRecords: () => {} }, { highWaterMark: 1 << 20, onProtocolError: () => {} });
  return { mux, sent };
}

describe('the port-forward mux over Unix sockets', () => {
  it('sends the end of a socket that ended, empty, before the device answered the open', async () => {
    const { mux, sent } = clientMux();
    const { ours, theirs } = await unixPair();
    mux.open(1, '127.0.0.1:22', ours);
    theirs.end(); // stdin was empty: the client half-closes at once
    await waitFor(() => ours.readableEnded || undefined, 'the end to be read');
    expect(sent).toEqual([{ type: 'open', id: 1, target: '127.0.0.1:22' }]);
    mux.text(JSON.stringify({ type: 'opened', id: 1 }));
    expect(sent.at(-1)).toEqual({ type: 'end', id: 1 });
  });

  it('cuts a Unix socket without a TCP reset when the stream ends', async () => {
    const { mux } = clientMux();
    const { ours, theirs } = await unixPair();
    mux.open(1, '127.0.0.1:22', ours);
    mux.text(JSON.stringify({ type: 'opened', id: 1 }));
    const closed = new Promise((r) => theirs.once('close', r));
    expect(() => mux.closeAll('the stream ended')).not.toThrow();
    await closed;
    expect(ours.destroyed).toBe(true);
  });
});
