// The customer-facing HTML pages at the root: the hosted checkout (/checkout/{token}), the
// payment-link page (/pay/{id}) and a plan's signup page (/subscribe/{plan id}). Each is one static document (built once, see build.ts) that reads its
// token from its own URL and talks to the public JSON API; nothing here touches the database.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { App, RouteOptions } from '../../http/types.ts';
import { buildHostedPage, type HostedPage, pickEncoding } from './build.ts';

const TOKEN = /^[A-Za-z0-9_-]{16,200}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PLAN = /^plan_[0-9A-Za-z]{14}$/;

type Pages = { checkout: HostedPage; pay: HostedPage; subscribe: HostedPage };
const pages = new Map<string, Pages>();

/**
 * Built on first use and kept for the life of the process (the sources do not change under it). With
 * Stripe as production's provider the checkout page loads Stripe.js, under Stripe's CSP; otherwise not.
 */
export function hostedPages(provider: 'simulator' | 'stripe' = 'simulator'): Pages {
  let built = pages.get(provider);
  if (!built) {
    built = {
      checkout: buildHostedPage('checkout.html', undefined, { stripe: provider === 'stripe' }),
      pay: buildHostedPage('pay.html'),
      subscribe: buildHostedPage('subscribe.html'),
    };
    pages.set(provider, built);
  }
  return built;
}

/**
 * Sends a page with its security headers. A malformed token or id still gets the page (which shows
 * its "not found" screen) but with status 404, so crawlers and monitors see the truth.
 */
function sendPage(request: FastifyRequest, reply: FastifyReply, page: HostedPage, found: boolean) {
  const encoding = pickEncoding(request.headers['accept-encoding']);
  reply
    .code(found ? 200 : 404)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', page.csp)
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cross-origin-resource-policy', 'same-origin')
    .header('permissions-policy', 'camera=(), microphone=(), geolocation=(), payment=()')
    .header('x-robots-tag', 'noindex, nofollow')
    // The URL carries a bearer token: no cache may keep the page under it.
    .header('cache-control', 'no-store')
    .header('vary', 'accept-encoding');
  if (encoding !== 'identity') reply.header('content-encoding', encoding);
  return reply.send(page.bodies[encoding]);
}

export async function pageRoutes(app: App, { ctx }: RouteOptions) {
  const { checkout, pay, subscribe } = hostedPages(ctx.config.provider);

  app.get(
    '/checkout/:token',
    { schema: { params: Type.Object({ token: Type.String() }) } },
    async (request, reply) => sendPage(request, reply, checkout, TOKEN.test(request.params.token)),
  );

  app.get('/pay/:id', { schema: { params: Type.Object({ id: Type.String() }) } }, async (request, reply) =>
    sendPage(request, reply, pay, UUID.test(request.params.id)),
  );

  app.get(
    '/subscribe/:plan',
    { schema: { params: Type.Object({ plan: Type.String() }) } },
    async (request, reply) => sendPage(request, reply, subscribe, PLAN.test(request.params.plan)),
  );
}
