/**
 * A small JSON client over fetch for the tests: returns status, headers and parsed body. Every
 * response is checked against the OpenAPI document (./openapi): one that is not as documented
 * fails the test.
 */
import { checkResponse } from './openapi';

export interface Reply<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface Client {
  get<T = any>(path: string, headers?: Record<string, string>): Promise<Reply<T>>;
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply<T>>;
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply<T>>;
  del<T = any>(path: string, headers?: Record<string, string>): Promise<Reply<T>>;
  /** A raw request: the body is sent as given (string) without any content type. */
  raw<T = any>(method: string, path: string, body?: string, headers?: Record<string, string>): Promise<Reply<T>>;
}

export function client(baseUrl: string, token?: string): Client {
  async function request<T>(method: string, path: string, body: string | undefined, headers: Record<string, string>) {
    const h: Record<string, string> = { ...headers };
    if (token !== undefined && !('authorization' in h)) h.authorization = `Bearer ${token}`;
    const res = await fetch(`${baseUrl}${path}`, { method, headers: h, body });
    const text = await res.text();
    checkResponse({ method, path, status: res.status, headers: res.headers, text });
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }
  const json = (b: unknown) => (b === undefined ? undefined : JSON.stringify(b));
  const jsonHeaders = (h?: Record<string, string>) => ({ 'content-type': 'application/json', ...h });
  return {
    get: (path, headers = {}) => request('GET', path, undefined, headers),
    post: (path, body, headers) => request('POST', path, json(body), jsonHeaders(headers)),
    put: (path, body, headers) => request('PUT', path, json(body), jsonHeaders(headers)),
    del: (path, headers = {}) => request('DELETE', path, undefined, headers),
    raw: (method, path, body, headers = {}) => request(method, path, body, headers),
  };
}
