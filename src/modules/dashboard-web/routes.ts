// The merchant dashboard web app at /dashboard/: serves the Vite build in web/dist/dashboard.
// Client routes (/dashboard/payments/TX…) get index.html; hashed files under assets/ are cached
// for a year; text is sent brotli- or gzip-compressed. Without a build, a page says how to make one.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../../http/errors.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { negotiateEncoding, resolveInside, type StaticFile, StaticFiles } from './static-files.ts';

export const DASHBOARD_DIST = fileURLToPath(new URL('../../../web/dist/dashboard/', import.meta.url));

const IMMUTABLE = 'public, max-age=31536000, immutable';

const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const MISSING_BUILD_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Kassa dashboard not built</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2933}
code{background:#f1f3f5;padding:.1rem .3rem;border-radius:4px}</style></head>
<body><main><h1>The dashboard has not been built yet</h1>
<p>The API is running, but the merchant dashboard's files are missing from <code>web/dist/dashboard</code>.</p>
<p>Build them with <code>npm run build</code> (<code>npm start</code> does it when they are missing
or out of date), then reload this page.</p></main></body></html>
`;

/** Route plugin serving the dashboard from `root` (the Vite output directory). */
export function createDashboardWebRoutes(root: string) {
  return async function dashboardWebRoutes(app: App, _options: RouteOptions) {
    const files = new StaticFiles(root);

    async function send(
      request: FastifyRequest,
      reply: FastifyReply,
      file: StaticFile,
      cacheControl: string,
    ) {
      reply.header('cache-control', cacheControl);
      reply.header('etag', file.etag);
      if (file.compressible) reply.header('vary', 'Accept-Encoding');
      if (file.contentType.startsWith('text/html')) {
        reply.header('content-security-policy', CONTENT_SECURITY_POLICY);
        reply.header('x-frame-options', 'DENY');
        reply.header('referrer-policy', 'same-origin');
      }
      const match = request.headers['if-none-match'];
      if (match && match.split(',').some((tag) => tag.trim().replace(/^W\//, '') === file.etag)) {
        return reply.code(304).send();
      }
      reply.type(file.contentType);
      const encoding = file.compressible ? negotiateEncoding(request.headers['accept-encoding']) : null;
      if (encoding) {
        reply.header('content-encoding', encoding);
        return reply.send(await files.encode(file, encoding));
      }
      return reply.send(file.body);
    }

    async function serve(request: FastifyRequest, reply: FastifyReply, rest: string) {
      const target = resolveInside(root, rest);
      if (target === null) throw new NotFoundError('Not found.');
      const lastSegment = rest.split('/').pop() ?? '';
      const isFileRequest = /\.[A-Za-z0-9]+$/.test(lastSegment);
      if (rest !== '' && rest !== 'index.html') {
        const file = await files.get(target);
        if (file) {
          const cacheControl = rest.startsWith('assets/') ? IMMUTABLE : 'public, max-age=300';
          return send(request, reply, file, cacheControl);
        }
        if (isFileRequest) throw new NotFoundError('Not found.');
      }
      const index = await files.get(join(root, 'index.html'));
      if (!index) {
        return reply
          .code(503)
          .header('cache-control', 'no-store')
          .type('text/html; charset=utf-8')
          .send(MISSING_BUILD_PAGE);
      }
      return send(request, reply, index, 'no-cache');
    }

    // With ignoreTrailingSlash, this route also answers /dashboard/; the bare path is redirected so
    // relative URLs and the client router always see the trailing slash.
    app.get('/dashboard', async (request, reply) => {
      const [path, query = ''] = request.url.split('?', 2);
      if (!path.endsWith('/')) return reply.redirect(`/dashboard/${query ? `?${query}` : ''}`, 301);
      return serve(request, reply, '');
    });

    app.get('/dashboard/*', async (request, reply) => {
      const rest = (request.params as Record<string, string | undefined>)['*'] ?? '';
      return serve(request, reply, rest);
    });
  };
}

export const dashboardWebRoutes = createDashboardWebRoutes(DASHBOARD_DIST);
