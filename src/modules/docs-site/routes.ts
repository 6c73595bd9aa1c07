// The docs site: /docs is the quickstart, /docs/<guide> every other guide (docs/*.md, the README,
// the SDK's README), /docs/api the API reference (Redoc, self-hosted from the redoc package, over
// /api/openapi.json). Guide pages run no script at all; the reference runs only this origin's
// scripts. And / sends visitors to the dashboard.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { NotFoundError } from '../../http/errors.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import {
  negotiateEncoding,
  resolveInside,
  type StaticFile,
  StaticFiles,
} from '../dashboard-web/static-files.ts';
import { API_REFERENCE_PAGE, guidePage, guides, REPO_ROOT } from './guides.ts';

const COMMON_POLICY = [
  "default-src 'none'",
  "style-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
];
/** Guides: HTML and CSS from this origin, no script. */
export const GUIDE_CSP = [...COMMON_POLICY, "script-src 'none'"].join('; ');
/**
 * The API reference: scripts and the document from this origin only; no inline script. Redoc writes
 * its styles from script (CSS-in-JS: style-src 'unsafe-inline') and embeds its icon font as a data:
 * URL. Its "powered by" logo, from Redocly's CDN, is refused (Redoc hides it when it fails to load).
 */
export const REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const require = createRequire(import.meta.url);

/** Where the assets come from: our own files in web/docs, and Redoc's standalone bundle. */
function assetFiles() {
  const redoc = dirname(require.resolve('redoc/bundles/redoc.standalone.js'));
  return {
    own: new StaticFiles(join(REPO_ROOT, 'web', 'docs')),
    redoc: new StaticFiles(redoc),
  };
}

function htmlHeaders(reply: FastifyReply, csp: string) {
  return reply
    .type('text/html; charset=utf-8')
    .header('content-security-policy', csp)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'same-origin')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cache-control', 'no-cache');
}

export async function docsSiteRoutes(app: App, _options: RouteOptions) {
  const files = assetFiles();

  async function sendAsset(request: FastifyRequest, reply: FastifyReply, file: StaticFile) {
    reply
      .header('cache-control', 'public, max-age=3600')
      .header('etag', file.etag)
      .header('cross-origin-resource-policy', 'same-origin')
      .type(file.contentType);
    if (file.compressible) reply.header('vary', 'Accept-Encoding');
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
    const encoding = file.compressible ? negotiateEncoding(request.headers['accept-encoding']) : null;
    if (!encoding) return reply.send(file.body);
    reply.header('content-encoding', encoding);
    return reply.send(await files.own.encode(file, encoding));
  }

  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
    return reply.redirect(`/dashboard/${query}`, 302);
  });

  app.get('/docs', { schema: { hide: true } }, async (_request, reply) => {
    const landing = guides().get('quickstart');
    if (!landing) throw new NotFoundError('Not found.');
    return htmlHeaders(reply, GUIDE_CSP).send(guidePage(landing));
  });

  app.get('/docs/api', { schema: { hide: true } }, async (_request, reply) =>
    htmlHeaders(reply, REFERENCE_CSP).send(API_REFERENCE_PAGE),
  );

  app.get<{ Params: { name: string } }>('/docs/:name', { schema: { hide: true } }, async (request, reply) => {
    const guide = guides().get(request.params.name.replace(/\.md$/, ''));
    if (!guide) throw new NotFoundError('Not found.');
    return htmlHeaders(reply, GUIDE_CSP).send(guidePage(guide));
  });

  app.get<{ Params: { '*': string } }>(
    '/docs/assets/*',
    { schema: { hide: true } },
    async (request, reply) => {
      const rest = request.params['*'];
      const source = rest === 'redoc.standalone.js' ? files.redoc : files.own;
      const path = resolveInside(source.root, rest);
      const file = path === null ? null : await source.get(path);
      if (!file) throw new NotFoundError('Not found.');
      return sendAsset(request, reply, file);
    },
  );
}
