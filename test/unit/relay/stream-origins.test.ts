/** The browser origins that may open session streams (`relay/streams.ts`, `streamOrigins`). */
import { describe, expect, it } from 'vitest';
import { streamOrigins } from '../../../relay/stream-origins';

const sorted = (origins: ReadonlySet<string>) => [...origins].sort();

describe('streamOrigins', () => {
  it("is the public URL's origin and the named ones", () => {
    expect(sorted(streamOrigins('https://tether.example.com/base', ['https://ops.example.com']))).toEqual([
      'https://ops.example.com',
      'https://tether.example.com',
    ]);
    expect(sorted(streamOrigins('https://Tether.Example.com:443', []))).toEqual(['https://tether.example.com']);
  });

  it('names a loopback URL by every loopback name, same scheme and port', () => {
    const aliases = (scheme: string, port: string) => [`${scheme}://127.0.0.1${port}`, `${scheme}://[::1]${port}`, `${scheme}://localhost${port}`];
    expect(sorted(streamOrigins('http://127.0.0.1:8080', []))).toEqual(aliases('http', ':8080'));
    expect(sorted(streamOrigins('http://localhost:8080', []))).toEqual(aliases('http', ':8080'));
    expect(sorted(streamOrigins('https://[::1]', []))).toEqual(aliases('https', ''));
    expect(sorted(streamOrigins('http://127.0.0.5:9', []))).toEqual([...aliases('http', ':9'), 'http://127.0.0.5:9'].sort());
  });

  it('gives a host that only looks like loopback no aliases', () => {
    expect(sorted(streamOrigins('http://localhost.example.com:8080', []))).toEqual(['http://localhost.example.com:8080']);
    expect(sorted(streamOrigins('http://0.0.0.0:8080', []))).toEqual(['http://0.0.0.0:8080']);
  });

  it('is the named origins only without a public URL', () => {
    expect(sorted(streamOrigins(undefined, ['https://ops.example.com']))).toEqual(['https://ops.example.com']);
  });
});
