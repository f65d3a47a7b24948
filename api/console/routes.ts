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

/** The headers every console response carries. */
function secure(ctx: Context): void {
  const host = ctx.get('host').replace(/[^A-Za-z0-9.:[\]-]/g, '');
  ctx.set(
    'Content-Security-Policy',
    [
      "default-src 'none'",
      "script-src 'self'",
      // xterm.js sets styles on its elements and writes its theme into a style element
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "font-src 'self'",
      `connect-src 'self' ws://${host} wss://${host}`,
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

async function sendFile(ctx: Context, path: string, cache: string): Promise<boolean> {
  const gz = `${path}.gz`;
  const gzip = ctx.acceptsEncodings('gzip', 'identity') === 'gzip' && existsSync(gz);
  const file = gzip ? gz : path;
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) return false;
  secure(ctx);
  ctx.set('Cache-Control', cache);
  ctx.vary('Accept-Encoding');
  if (gzip) ctx.set('Content-Encoding', 'gzip');
  ctx.type = TYPES[extname(path)] ?? (path.endsWith('.html') ? 'text/html; charset=utf-8' : 'application/octet-stream');
  ctx.length = info.size;
  ctx.body = createReadStream(file);
  return true;
}

/** The console's routes; `dir` is where the built console is (none: `/` says how to build it). */
export function consoleRoutes(dir: string | undefined): Router {
  const router = new Router();

  router.get('/', async function consolePage(ctx) {
    if (dir && (await sendFile(ctx, join(dir, 'index.html'), 'no-cache'))) return;
    secure(ctx);
    ctx.status = 503;
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = 'The web console is not built: run `npm run build`, then reload.\n';
  });

  router.get('/assets/:file', async function consoleAsset(ctx) {
    const name = ctx.params.file!;
    // Built names only (`app-3F2A1C.js`): nothing that could leave the directory.
    if (dir && /^[A-Za-z0-9._-]+$/.test(name) && !name.startsWith('.') && (await sendFile(ctx, join(dir, 'assets', name), 'public, max-age=31536000, immutable'))) return;
    ctx.status = 404;
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = 'not found\n';
  });

  return router;
}
