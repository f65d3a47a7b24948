/**
 * @module The soak test's clients: a session's stream that counts its payload bytes both ways
 * (what the relay must have counted), opening a session, and closing one with its record checked;
 * and the tally every check adds to.
 */
import { WebSocket } from 'ws';
import type { Session } from '../shared/api/sessions';
import type { DeviceFrame } from '../shared/protocol/session-stream';
import { call, type Data, type ServerProcess } from './lib';

const MiB = 1024 * 1024;

/** What the soak counted, and the errors it met (50 kept, all counted). */
export class Tally {
  errors: string[] = [];
  echoes = 0;
  echoMicros: number[] = [];
  uploads = 0;
  downloads = 0;
  bytesMoved = 0;
  sessionsChecked = 0;
  countersWrong = 0;

  fail(what: string): void {
    if (this.errors.length < 50) this.errors.push(what);
    else this.errors.length++;
  }
}

/** A session's stream with payload byte counts both ways (what the relay must have counted). */
export class Client {
  readonly ws: WebSocket;
  sent = 0;
  received = 0;
  text = '';
  readonly closed: Promise<{ code: number; reason: string }>;
  onBinary?: (data: Buffer) => void;
  /** A text frame, as the device sent it (not checked: the soak test trusts its own server). */
  onJson?: (msg: DeviceFrame) => void;

  constructor(url: string) {
    this.ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 16 * MiB });
    this.closed = new Promise((r) => this.ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
    this.ws.on('error', () => {});
    this.ws.on('message', (data: Buffer, isBinary) => {
      this.received += data.length;
      if (isBinary) this.onBinary?.(data);
      else this.onJson?.(JSON.parse(data.toString()) as DeviceFrame);
    });
  }

  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('close', (code) => reject(new Error(`closed ${code} before opening`)));
    });
  }

  send(data: Buffer | object): Promise<void> {
    const payload = Buffer.isBuffer(data) ? data : Buffer.from(JSON.stringify(data));
    this.sent += payload.length;
    return new Promise((resolve, reject) => this.ws.send(payload, { binary: Buffer.isBuffer(data) }, (err) => (err ? reject(err) : resolve())));
  }
}

export async function openSession(server: ServerProcess, token: string, deviceId: string, protocol: string) {
  const r = await call<Data<Session>>(`${server.url}/v1/remote-access/sessions`, 'POST', token, { device_id: deviceId, protocol, ttl_seconds: 3600 });
  if (r.status !== 201) throw new Error(`open ${protocol} on ${deviceId}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data as { session_id: string; websocket_url: string };
}

/** Closes the session and checks its record: closed, counters equal to what the client counted. */
export async function closeAndCheck(server: ServerProcess, token: string, sessionId: string, client: Client, what: string, tally: Tally) {
  const r = await call(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'DELETE', token);
  if (r.status !== 200) return tally.fail(`${what}: close answered ${r.status}`);
  const closed = await client.closed;
  if (closed.code !== 4000) tally.fail(`${what}: stream closed ${closed.code} ${closed.reason}, expected 4000`);
  const s = (await call<Data<Session>>(`${server.url}/v1/remote-access/sessions/${sessionId}`, 'GET', token)).body.data;
  tally.sessionsChecked++;
  if (s.status !== 'closed' || s.bytes_to_device !== client.sent || s.bytes_from_device !== client.received) {
    tally.countersWrong++;
    tally.fail(`${what}: record ${s.status} ${s.bytes_to_device}/${s.bytes_from_device}, client counted ${client.sent}/${client.received}`);
  }
}
