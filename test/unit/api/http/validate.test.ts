/** Validation at the edge: every problem becomes one `{path, message}` detail of a 400, unknown fields and repeated query parameters included, and numbers stay in range. */
import { IncomingMessage, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import Koa, { type Context } from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../../../../api/errors';
import { issuesToDetails, offsetOf, parseBody, parseOrThrow, parseQuery } from '../../../../api/http/validate';
import { dateTimeParam, intParam, pagingParams } from '../../../../shared/api/common';

/** The ApiError `fn` throws (fails the test if it throws anything else or nothing). */
function thrownBy(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error('expected an ApiError, nothing was thrown');
}

describe('parseOrThrow', () => {
  const schema = z.strictObject({
    name: z.string().min(1),
    tags: z.array(z.string()).optional(),
    owner: z.strictObject({ email: z.string().email() }).optional(),
  });

  it('returns the parsed value', () => {
    expect(parseOrThrow(schema, { name: 'web', tags: ['a'] }, 'request body')).toEqual({ name: 'web', tags: ['a'] });
    expect(parseOrThrow(intParam(1, 10, 5), '7', 'query')).toBe(7); // transforms apply
  });

  it('lists every problem at once, each at its own path, as a 400 bad_request', () => {
    const err = thrownBy(() => parseOrThrow(schema, { name: '', tags: ['ok', 3], owner: { email: 'nope' } }, 'request body'));
    expect(err).toMatchObject({ code: 'bad_request', status: 400 });
    expect(err.details?.map((d) => d.path)).toEqual(['name', 'tags[1]', 'owner.email']);
    for (const d of err.details!) expect(Object.keys(d).sort()).toEqual(['message', 'path']);
    expect(err.message).toBe(`invalid request body: ${err.details!.map((d) => `${d.path}: ${d.message}`).join('; ')}`);
  });

  it('names each unknown field on its own, at its own path, nested ones included', () => {
    const err = thrownBy(() => parseOrThrow(schema, { name: 'web', colour: 'red', size: 3, owner: { email: 'a@b.co', phone: '1' } }, 'request body'));
    // (in zod's order: nested objects report before their parent)
    expect([...err.details!].sort((a, b) => a.path.localeCompare(b.path))).toEqual([
      { path: 'colour', message: 'unknown field' },
      { path: 'owner.phone', message: 'unknown field' },
      { path: 'size', message: 'unknown field' },
    ]);
  });

  it('calls a problem with the value itself `(root)`', () => {
    const err = thrownBy(() => parseOrThrow(schema, 'not an object', 'request body'));
    expect(err.details).toHaveLength(1);
    expect(err.details![0]!.path).toBe('(root)');
  });
});

describe('issuesToDetails', () => {
  it('puts the prefix in front of every path', () => {
    const result = z.strictObject({ vin: z.string().length(17) }).safeParse({ vin: 'x', extra: 1 });
    expect(result.success).toBe(false);
    const details = issuesToDetails(result.error!.issues, ['vehicles', 2]);
    expect(details.map((d) => d.path)).toEqual(['vehicles[2].vin', 'vehicles[2].extra']);
    expect(details[1]!.message).toBe('unknown field');
  });
});

describe('intParam', () => {
  const perPage = intParam(1, 100, 20);
  const problemOf = (value: string) => thrownBy(() => parseOrThrow(z.strictObject({ n: perPage }), { n: value }, 'query')).details!;

  it('uses the fallback when absent and accepts both bounds', () => {
    expect(perPage.parse(undefined)).toBe(20);
    expect(perPage.parse('1')).toBe(1);
    expect(perPage.parse('100')).toBe(100);
    expect(perPage.parse('007')).toBe(7);
  });

  it('refuses anything but plain digits', () => {
    for (const bad of ['', '-1', '+1', '1.5', '1e2', '0x10', ' 5', '5 ', 'ten']) {
      expect(problemOf(bad), JSON.stringify(bad)).toEqual([{ path: 'n', message: 'must be a whole number' }]);
    }
  });

  it('refuses more than nine digits before converting (no precision games)', () => {
    expect(problemOf('0000000001')).toEqual([{ path: 'n', message: 'must be a whole number' }]);
    expect(problemOf('99999999999999999999')).toEqual([{ path: 'n', message: 'must be a whole number' }]);
  });

  it('refuses values out of range, naming the bound', () => {
    const [low] = problemOf('0');
    expect(low!.path).toBe('n');
    expect(low!.message).toBe('must be at least 1');
    const [high] = problemOf('101');
    expect(high!.message).toBe('must be at most 100');
  });
});

describe('dateTimeParam', () => {
  it('normalises an ISO 8601 date-time with an offset to UTC with milliseconds', () => {
    expect(dateTimeParam.parse('2026-01-01T01:00:00+01:00')).toBe('2026-01-01T00:00:00.000Z');
    expect(dateTimeParam.parse('2026-03-04T05:06:07Z')).toBe('2026-03-04T05:06:07.000Z');
  });

  it('refuses a date alone, a time without zone, and junk', () => {
    for (const bad of ['2026-01-01', '2026-01-01T00:00:00', 'yesterday']) {
      expect(dateTimeParam.safeParse(bad).success, bad).toBe(false);
    }
  });
});

describe('pagingParams and offsetOf', () => {
  it('default to page 1 and the given page size, and bound both', () => {
    const paging = z.strictObject(pagingParams(50, 10));
    expect(paging.parse({})).toEqual({ page: 1, per_page: 10 });
    expect(paging.safeParse({ page: '0' }).success).toBe(false);
    expect(paging.safeParse({ per_page: '51' }).success).toBe(false);
    expect(paging.parse({ page: '1000000', per_page: '50' })).toEqual({ page: 1_000_000, per_page: 50 });
  });

  it('turns a page into the rows to skip', () => {
    expect(offsetOf({ page: 1, per_page: 20 })).toBe(0);
    expect(offsetOf({ page: 3, per_page: 20 })).toBe(40);
  });
});

describe('parseQuery', () => {
  const app = new Koa();
  /** A context Koa itself builds around a real request for `url`. */
  function contextFor(url: string): Context {
    const req = new IncomingMessage(new Socket());
    req.method = 'GET';
    req.url = url;
    req.headers = { host: '127.0.0.1' };
    return app.createContext(req, new ServerResponse(req)) as Context;
  }
  const schema = z.strictObject({ status: z.enum(['open', 'closed']).optional(), ...pagingParams(100, 20) });

  it('parses the query string with defaults', () => {
    expect(parseQuery(contextFor('/x?status=open&page=2'), schema)).toEqual({ status: 'open', page: 2, per_page: 20 });
    expect(parseQuery(contextFor('/x'), schema)).toEqual({ page: 1, per_page: 20 });
  });

  it('refuses a parameter given twice, naming each one, before looking at the values', () => {
    const err = thrownBy(() => parseQuery(contextFor('/x?page=1&page=2&status=open&status=bogus&per_page=5'), schema));
    expect(err).toMatchObject({ code: 'bad_request', status: 400, message: 'invalid query: a parameter was given more than once' });
    expect(err.details).toEqual([
      { path: 'page', message: 'query parameter given more than once' },
      { path: 'status', message: 'query parameter given more than once' },
    ]);
  });

  it('names unknown parameters and bad values together', () => {
    const err = thrownBy(() => parseQuery(contextFor('/x?status=gone&per_page=500&sort=name'), schema));
    expect(err.message).toMatch(/^invalid query: /);
    expect(err.details?.map((d) => d.path)).toEqual(['status', 'per_page', 'sort']);
    expect(err.details?.at(-1)).toEqual({ path: 'sort', message: 'unknown field' });
  });
});

describe('parseBody', () => {
  const schema = z.strictObject({ device_id: z.string().min(1), labels: z.record(z.string(), z.string()).optional() });
  let server: Server;
  let url: string;

  beforeAll(async () => {
    const app = new Koa();
    app.use(async function parseOrReport(ctx) {
      try {
        ctx.body = { parsed: await parseBody(ctx, schema) };
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        ctx.status = err.status;
        ctx.body = { code: err.code, message: err.message, details: err.details ?? null };
      }
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const post = async (body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(url, { method: 'POST', body, headers });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it('parses a JSON body whatever its content type', async () => {
    const input = { device_id: 'd1', labels: { site: 'berlin' } };
    expect(await post(JSON.stringify(input), { 'content-type': 'application/x-www-form-urlencoded' })).toEqual({ status: 200, json: { parsed: input } });
  });

  it('refuses unknown fields and bad values with one detail each', async () => {
    const { status, json } = await post(JSON.stringify({ device_id: '', labels: { site: 1 }, owner: 'ann' }));
    expect(status).toBe(400);
    expect(json.code).toBe('bad_request');
    expect((json.details as { path: string }[]).map((d) => d.path)).toEqual(['device_id', 'labels.site', 'owner']);
    expect(json.message).toMatch(/^invalid request body: device_id: /);
  });

  it('reads an empty body as {} and reports the missing fields', async () => {
    const { status, json } = await post('  ');
    expect(status).toBe(400);
    expect((json.details as { path: string }[]).map((d) => d.path)).toEqual(['device_id']);
  });

  it('refuses malformed JSON with the parser complaint and no details', async () => {
    const { status, json } = await post('{"device_id": ');
    expect(status).toBe(400);
    expect(json.message).toMatch(/^malformed JSON body: /);
    expect(json.details).toBeNull();
  });
});
