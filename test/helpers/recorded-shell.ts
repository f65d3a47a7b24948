/**
 * A recorded shell session driven through its stream, as the recordings' end-to-end tests do it:
 * open it, run commands in it, close it and read its recording once it is finished.
 */
import { expect } from 'vitest';
import type { Client } from './http';
import { connectStream, type StreamClient } from './stream';
import { waitFor } from './wait';

/** What the helpers need of a server: a client with a token. */
export interface AsClient {
  as(token: string): Client;
}

/** Opens a shell session on `device` and connects its stream. */
export async function openRecordedShell(server: AsClient, token: string, device: string) {
  const res = await server.as(token).post('/v1/remote-access/sessions', { device_id: device, protocol: 'shell' });
  expect(res.status, res.text).toBe(201);
  const c = connectStream(res.body.data.websocket_url);
  await c.opened;
  return { session: res.body.data as { session_id: string }, c };
}

/** Runs `command` in the shell and waits for `marker` in the output. */
export async function runInShell(c: StreamClient, command: string, marker: RegExp): Promise<void> {
  c.send(Buffer.from(`${command}\n`));
  await c.waitForOutput(marker);
}

/** Closes the session, waits until its recording is finished, and reads it (asciicast). */
export async function closeAndReadRecording(server: AsClient, token: string, sessionId: string, c: StreamClient) {
  expect((await server.as(token).del(`/v1/remote-access/sessions/${sessionId}`)).status).toBe(200);
  await c.closed;
  // The recording is finished once the record says so.
  await waitFor(
    async () => (await server.as(token).get(`/v1/remote-access/sessions/${sessionId}`)).body.data.recording?.in_progress === false,
    'the recording to finish',
  );
  return server.as(token).get(`/v1/remote-access/sessions/${sessionId}/recording`);
}
