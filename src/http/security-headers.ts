// Response headers that do not belong to any one module:
// - Strict-Transport-Security on every answer when KASSA_PUBLIC_URL is https (browsers then refuse to
//   reach the service over plain http, which would expose session cookies and checkout tokens);
// - a Content-Security-Policy and frame refusal on the API docs (/docs), which run scripts on the
//   service's own origin; a policy the docs route sets itself is kept.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../context.ts';

/** One year, as browsers' HSTS preload lists expect; subdomains are not assumed to be ours. */
export const HSTS = 'max-age=31536000';

export const DOCS_CSP =
  "default-src 'self'; base-uri 'self'; object-src 'none'; script-src 'self'; script-src-attr 'none'; " +
  "style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'; " +
  "form-action 'self'; frame-ancestors 'none'";

function isDocs(url: string): boolean {
  return url === '/docs' || url.startsWith('/docs/') || url.startsWith('/docs?');
}

/** An onSend hook body: reads the public URL at answer time (tests and operators may change it). */
export function addSecurityHeaders(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): void {
  if (ctx.config.publicUrl.startsWith('https:')) reply.header('strict-transport-security', HSTS);
  if (isDocs(request.url)) {
    if (!reply.hasHeader('content-security-policy')) reply.header('content-security-policy', DOCS_CSP);
    reply.header('x-frame-options', 'DENY');
  }
}
