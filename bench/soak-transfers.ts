/**
 * @module The soak test's transfers: one file-transfer session uploads a file (a tar generated and
 * hashed as it goes), downloads it back and compares digests, until the time is up.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as tar from 'tar-stream';
import type { DeviceFrame, DownloadDone, Response, UploadDone } from '../shared/protocol/session-stream';
import type { ServerProcess } from './lib';
import { Client, closeAndCheck, openSession, type Tally } from './soak-client';

const MiB = 1024 * 1024;

/** One file-transfer session: upload a file, download it, compare digests, until the time is up. */
export async function transferWorker(server: ServerProcess, token: string, deviceId: string, until: number, fileBytes: number, tally: Tally): Promise<void> {
  const what = `transfer on ${deviceId}`;
  const session = await openSession(server, token, deviceId, 'file-transfer');
  const client = new Client(session.websocket_url);
  // `match` takes only answers to requests (`Response`): what the promise of `reply` resolves with.
  let waiting: { id: number; resolve: (m: Response) => void; match: (m: DeviceFrame) => boolean } | undefined;
  client.onJson = (m) => {
    if (waiting && 'id' in m && m.id === waiting.id && waiting.match(m)) {
      const w = waiting;
      waiting = undefined;
      w.resolve(m as Response);
    }
  };
  const reply = (id: number, match: (m: DeviceFrame) => boolean = (m) => 'ok' in m) => new Promise<Response>((resolve) => (waiting = { id, resolve, match }));
  await client.opened();
  const name = `soak-${deviceId}.bin`;
  let id = 0;
  try {
    for (let round = 0; Date.now() < until; round++) {
      // upload: a tar of one file, generated and hashed as it goes
      const up = ++id;
      let answer = reply(up);
      await client.send({ id: up, op: 'upload', params: { path: '/' } });
      if (!(await answer).ok) throw new Error(`${what}: upload refused`);
      const sent = createHash('sha256');
      const pack = tar.pack();
      const packed = (async () => {
        for await (const chunk of pack as AsyncIterable<Buffer>) {
          await client.send(chunk);
        }
      })();
      const entry = pack.entry({ name, size: fileBytes, mode: 0o644 });
      const block = randomBytes(MiB);
      for (let done = 0; done < fileBytes; done += MiB) {
        block.writeUInt32BE(round, 0);
        block.writeUInt32BE(done / MiB, 4);
        sent.update(block);
        if (!entry.write(Buffer.from(block))) await new Promise<void>((r) => entry.once('drain', () => r()));
      }
      (entry as unknown as NodeJS.WritableStream).end();
      pack.finalize();
      await packed;
      answer = reply(up, (m) => 'ok' in m && m.ok && (m.result as Partial<UploadDone> | undefined)?.files !== undefined);
      await client.send({ id: up, op: 'end' });
      const committed = await answer;
      if (!committed.ok || (committed.result as UploadDone).bytes !== fileBytes) throw new Error(`${what}: upload answered ${JSON.stringify(committed)}`);
      tally.uploads++;
      tally.bytesMoved += fileBytes;

      // download it back and compare
      const down = ++id;
      const received = createHash('sha256');
      const extract = tar.extract();
      let got = 0;
      extract.on('entry', (_h, stream, next) => {
        stream.on('data', (c) => {
          got += (c as Buffer).length;
          received.update(c as Buffer);
        });
        stream.on('end', () => next());
      });
      const extracted = new Promise<void>((r) => extract.on('finish', () => r()));
      client.onBinary = (d) => {
        if (!extract.write(d)) {
          client.ws.pause();
          extract.once('drain', () => client.ws.resume());
        }
      };
      const started = reply(down);
      const finished = new Promise<DownloadDone>((resolve) => {
        const previous = client.onJson!;
        client.onJson = (m) => {
          if ('done' in m && m.id === down && m.done) {
            client.onJson = previous;
            resolve(m);
          } else previous(m);
        };
      });
      await client.send({ id: down, op: 'download', params: { path: name } });
      if (!(await started).ok) throw new Error(`${what}: download refused`);
      await finished;
      (extract as unknown as NodeJS.WritableStream).end();
      await extracted;
      client.onBinary = undefined;
      if (got !== fileBytes || received.digest('hex') !== sent.digest('hex')) throw new Error(`${what}: downloaded bytes differ`);
      tally.downloads++;
      tally.bytesMoved += fileBytes;
    }
  } catch (err) {
    tally.fail((err as Error).message);
  }
  await closeAndCheck(server, token, session.session_id, client, what, tally);
}
