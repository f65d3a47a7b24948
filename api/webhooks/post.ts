/**
 * @module One delivery attempt on the wire: `POST url` with the stored body and its headers,
 * within a timeout, following no redirect (a 3xx is an answer, not a 2xx), reading at most a few
 * KiB of the answer (a receiver cannot make the sender keep more), on a connection of its own that
 * closes afterwards. It never throws: a failure is an answer without a status code.
 */
import http from 'node:http';
import https from 'node:https';

/** How much of a response's body is read, for the deliveries log's `last_error`. */
const MAX_RESPONSE_BYTES = 4096;
/** How much of it `last_error` keeps. */
const ERROR_TEXT_CHARS = 200;

export interface PostResult {
  /** The HTTP status, or null when no response came (refused, timed out, reset, aborted). */
  status: number | null;
  /** Null on a 2xx; else what went wrong, short. */
  error: string | null;
}

/** The start of a response's text, on one line, for the log. */
const snippet = (body: Buffer): string => body.toString('utf8').replace(/\s+/g, ' ').trim().slice(0, ERROR_TEXT_CHARS);

/** POSTs `body` to `url` with `headers`; `signal` aborts it (shutdown). */
export function postOnce(url: string, body: string, headers: Record<string, string>, timeoutMs: number, signal: AbortSignal): Promise<PostResult> {
  return new Promise((resolve) => {
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (r: PostResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      req.destroy();
      resolve(r);
    };
    const target = new URL(url);
    const payload = Buffer.from(body, 'utf8');
    const req = (target.protocol === 'https:' ? https : http).request(target, {
      method: 'POST',
      headers: { ...headers, 'content-length': String(payload.length), connection: 'close' },
      agent: false,
      signal,
    });
    // The timeout bounds the whole attempt, connecting and the answer included.
    timer = setTimeout(() => finish({ status: null, error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    req.on('error', function postFailed(err: NodeJS.ErrnoException) {
      finish({ status: null, error: signal.aborted ? 'aborted: the server is stopping' : (err.code ?? err.message) });
    });
    req.on('response', function postAnswered(res) {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      const settle = () => {
        if (status >= 200 && status < 300) return finish({ status, error: null });
        const moved = status >= 300 && status < 400 ? ` (redirects are not followed: ${res.headers.location ?? 'no Location'})` : '';
        const text = snippet(Buffer.concat(chunks));
        finish({ status, error: `HTTP ${status}${moved}${text === '' ? '' : `: ${text}`}` });
      };
      res.on('error', () => settle());
      res.on('data', function responseData(chunk: Buffer) {
        if (size < MAX_RESPONSE_BYTES) chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - size));
        size += chunk.length;
        // Enough read: the answer's status is what counts.
        if (size >= MAX_RESPONSE_BYTES) settle();
      });
      res.on('end', settle);
    });
    req.end(payload);
  });
}
