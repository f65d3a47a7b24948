/**
 * A strict asciicast v2 reader, written from the format's specification
 * (docs.asciinema.org/manual/asciicast/v2) and from nothing of tether's: the tests judge the
 * recordings the server writes with it. It throws, naming the line, at anything the spec does not allow.
 */

export interface StrictCast {
  header: { version: 2; width: number; height: number; [key: string]: unknown };
  events: Array<[number, 'o' | 'i' | 'm' | 'r', string]>;
}

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

export function parseCastStrict(text: string): StrictCast {
  if (!text.endsWith('\n')) throw new Error('the file does not end with a newline');
  const lines = text.slice(0, -1).split('\n');
  const fail = (n: number, why: string): never => {
    throw new Error(`line ${n + 1}: ${why}: ${lines[n]!.slice(0, 200)}`);
  };
  let header: unknown;
  try {
    header = JSON.parse(lines[0]!);
  } catch {
    fail(0, 'the header is not JSON');
  }
  if (!isObject(header)) return fail(0, 'the header is not a JSON object');
  if (header.version !== 2) fail(0, 'version is not 2');
  for (const key of ['width', 'height']) {
    if (!Number.isInteger(header[key]) || (header[key] as number) <= 0) fail(0, `${key} is not a positive integer`);
  }
  if ('timestamp' in header && !Number.isInteger(header.timestamp)) fail(0, 'timestamp is not an integer (unix seconds)');
  for (const key of ['duration', 'idle_time_limit']) if (key in header && typeof header[key] !== 'number') fail(0, `${key} is not a number`);
  for (const key of ['command', 'title']) if (key in header && typeof header[key] !== 'string') fail(0, `${key} is not a string`);
  if ('env' in header && (!isObject(header.env) || Object.values(header.env).some((v) => typeof v !== 'string'))) fail(0, 'env is not an object of strings');
  if ('theme' in header && !isObject(header.theme)) fail(0, 'theme is not an object');

  const events: StrictCast['events'] = [];
  let last = 0;
  for (let n = 1; n < lines.length; n++) {
    let event: unknown;
    try {
      event = JSON.parse(lines[n]!);
    } catch {
      fail(n, 'the event is not JSON');
    }
    if (!Array.isArray(event) || event.length !== 3) fail(n, 'an event is an array of three');
    const [time, code, data] = event as unknown[];
    if (typeof time !== 'number' || !Number.isFinite(time) || time < 0) fail(n, 'the time is not a number of seconds');
    if ((time as number) < last) fail(n, 'the time goes backwards');
    last = time as number;
    if (code !== 'o' && code !== 'i' && code !== 'm' && code !== 'r') fail(n, 'the code is not o, i, m or r');
    if (typeof data !== 'string') fail(n, 'the data is not a string');
    if (code === 'r' && !/^\d+x\d+$/.test(data as string)) fail(n, 'a resize is not COLSxROWS');
    events.push([time as number, code as 'o', data as string]);
  }
  return { header: header as StrictCast['header'], events };
}
