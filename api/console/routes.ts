/**
 * @module The web console's files (`npm run build` puts them in `dist/console`): `/` is its page,
 * `/assets/*` its scripts and styles under content-hashed names, cached for good and sent gzipped
 * to browsers that take gzip. Every console response carries a strict Content-Security-Policy:
 * scripts only from this origin (none inline), no framing, connections only back to this server.
 */
import { createReadStream, existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Context } from 'koa';
import Router from '@koa/router';

const TYPES: Record<string, string> = {
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

/**
 * The headers every console response carries. Streams may go back to the host the page came
 * from, or to where `websocket_url` points (the public URL: a console opened at `localhost` joins
 * streams at `127.0.0.1`).
 */
function secure(ctx: Context, streamOrigin: string | undefined): void {
  const host = ctx.get('host').replace(/[^A-Za-z0-9.:[\]-]/g, '');
  const streams = streamOrigin === undefined || streamOrigin === `ws://${host}` || streamOrigin === `wss://${host}` ? '' : ` ${streamOrigin}`;
  ctx.set(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      "script-src 'self'",
      // xterm.js sets styles on its elements and writes its theme into a style element
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "font-src 'self'",
      `connect-src 'self' ws://${host} wss://${host}${streams}`,
      "frame-ancestors 'none'",
      "base-uri 'none'",
      "form-action 'self'",
    ].join('; '),
  );
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'no-referrer');
  ctx.set('Cross-Origin-Opener-Policy', 'same-origin');
}

async function sendFile(ctx: Context, path: string, cache: string, streamOrigin: string | undefined): Promise<boolean> {
  const gz = `${path}.gz`;
  const gzip = ctx.acceptsEncodings('gzip', 'identity') === 'gzip' && existsSync(gz);
  const file = gzip ? gz : path;
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) return false;
  secure(ctx, streamOrigin);
  ctx.set('Cache-Control', cache);
  ctx.vary('Accept-Encoding');
  if (gzip) ctx.set('Content-Encoding', 'gzip');
  ctx.type = TYPES[extname(path)] ?? (path.endsWith('.html') ? 'text/html; charset=utf-8' : 'application/octet-stream');
  ctx.length = info.size;
  ctx.body = createReadStream(file);
  return true;
}

/**
 * The console's routes; `dir` is where the built console is (none: `/` says how to build it);
 * `wsBase` is where session streams are joined (`ws(s)://host:port` of the public URL).
 */
export function consoleRoutes(dir: string | undefined, wsBase?: () => string): Router {
  const router = new Router();
  const streamOrigin = (): string | undefined => {
    const base = wsBase?.();
    return base !== undefined && URL.canParse(base) ? new URL(base).origin : undefined;
  };

  router.get('/', async function consolePage(ctx) {
    if (dir && (await sendFile(ctx, join(dir, 'index.html'), 'no-cache', streamOrigin()))) return;
    secure(ctx, streamOrigin());
    ctx.status = 503;
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = 'The web console is not built: run `npm run build`, then reload.\n';
  });

  router.get('/assets/:file', async function consoleAsset(ctx) {
    const name = ctx.params.file!;
    // Built names only (`app-3F2A1C.js`): nothing that could leave the directory.
    if (
      dir &&
      /^[A-Za-z0-9._-]+$/.test(name) &&
      !name.startsWith('.') &&
      (await sendFile(ctx, join(dir, 'assets', name), 'public, max-age=31536000, immutable', streamOrigin()))
    )
      return;
    ctx.status = 404;
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = 'not found\n';
  });

  return router;
}
