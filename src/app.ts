// Builds the Fastify app: cross-cutting plugins, then each module's routes.
import { randomUUID } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyRequest } from 'fastify';
import type { AppContext } from './context.ts';
import { ping } from './db/connection.ts';
import { apiKeyAuth } from './http/auth.ts';
import {
  clientError,
  frameworkError,
  registerErrorHandling,
  ValidationError,
  wrongContentType,
} from './http/errors.ts';
import { createMetrics } from './http/metrics.ts';
import { registerOpenApi } from './http/openapi.ts';
import { addSecurityHeaders } from './http/security-headers.ts';
import type { ApiKeyRouteOptions, App, RouteOptions } from './http/types.ts';
import { apiKeyRoutes } from './modules/api-keys/routes.ts';
import { auditRoutes } from './modules/audit/routes.ts';
import { authRoutes } from './modules/auth/routes.ts';
import { checkoutApiRoutes, checkoutPublicRoutes } from './modules/checkout/routes.ts';
import { dashboardWebRoutes } from './modules/dashboard-web/routes.ts';
import { devMailRoutes } from './modules/dev-mail/routes.ts';
import { docsSiteRoutes } from './modules/docs-site/routes.ts';
import { eventRoutes } from './modules/events/routes.ts';
import { exportRoutes } from './modules/exports/routes.ts';
import { recordIdempotentResponse } from './modules/idempotency/service.ts';
import { memberRoutes } from './modules/members/routes.ts';
import { organizationRoutes } from './modules/organizations/routes.ts';
import { pageRoutes } from './modules/pages/routes.ts';
import { paymentLinkRoutes } from './modules/payment-links/routes.ts';
import { providerRoutes } from './modules/payments/provider-routes.ts';
import { paymentApiRoutes, paymentSessionRoutes, providerWebhookRoutes } from './modules/payments/routes.ts';
import { payoutRoutes } from './modules/payouts/routes.ts';
import { productRoutes } from './modules/products/routes.ts';
import { refundApiRoutes, refundSessionRoutes } from './modules/refunds/routes.ts';
import { searchRoutes } from './modules/search/routes.ts';
import { subscriptionRoutes } from './modules/subscriptions/routes.ts';
import { walletRoutes } from './modules/wallet/routes.ts';
import { webhookRoutes } from './modules/webhooks/routes.ts';
import { flaggedOperationCounts } from './provider/operations/store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    rawBody: string | undefined;
  }
}

/** Dashboard-session and public endpoints, under /api. */
const SESSION_AND_PUBLIC_ROUTES: ((app: App, options: RouteOptions) => Promise<void>)[] = [
  authRoutes,
  memberRoutes,
  auditRoutes,
  organizationRoutes,
  eventRoutes,
  apiKeyRoutes,
  productRoutes,
  walletRoutes,
  refundSessionRoutes,
  payoutRoutes,
  paymentLinkRoutes,
  webhookRoutes,
  checkoutPublicRoutes,
  paymentSessionRoutes,
  providerWebhookRoutes,
  exportRoutes,
  searchRoutes,
  devMailRoutes,
  providerRoutes,
  subscriptionRoutes,
];

/** API-key endpoints, registered under /api (production keys) and /sandbox/api (sandbox keys). */
const API_KEY_ROUTES: ((app: App, options: ApiKeyRouteOptions) => Promise<void>)[] = [
  refundApiRoutes,
  checkoutApiRoutes,
  paymentApiRoutes,
];

/** HTML pages and static assets at the root (/checkout/{token}, /pay/{id}, /dashboard/, /docs, /). */
const PAGE_ROUTES: ((app: App, options: RouteOptions) => Promise<void>)[] = [
  dashboardWebRoutes,
  pageRoutes,
  docsSiteRoutes,
];

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The checkout token segment of a path (/checkout/{token}, /api/checkout/{token}/pay/): a bearer
 * capability. The router folds repeated slashes, so they are allowed before it; create/ and
 * sync-status/ are routes, not tokens, and stay readable.
 */
const CHECKOUT_TOKEN = /\/checkout\/+(?!(?:create|sync-status)(?:[/?#]|$))[^/?#]+/;

/** Paths that carry a bearer capability (checkout tokens) are logged without it. */
export function redactUrl(url: string): string {
  return url.replace(CHECKOUT_TOKEN, '/checkout/[redacted]');
}

/** Whether any string or key of a parsed JSON value holds NUL (walked without recursion: bodies may nest deep). */
function holdsNul(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const item = pending.pop();
    if (typeof item === 'string' && item.includes('\0')) return true;
    if (item === null || typeof item !== 'object') continue;
    for (const [key, child] of Object.entries(item)) {
      if (key.includes('\0')) return true;
      pending.push(child);
    }
  }
  return false;
}

/** KASSA_TRUST_PROXY as Fastify takes it: a hop count is "trust the n nearest hops" (proxy-addr's rule). */
function trustProxyOption(trust: AppContext['config']['trustProxy']) {
  return typeof trust === 'number' ? (_address: string, hop: number) => hop < trust : trust;
}

export async function buildApp(ctx: AppContext): Promise<App> {
  const app = Fastify({
    logger:
      ctx.config.logLevel === 'silent'
        ? false
        : {
            level: ctx.config.logLevel,
            redact: {
              paths: [
                'req.headers.authorization',
                'req.headers["api-key"]',
                'req.headers.cookie',
                'res.headers["set-cookie"]',
              ],
              censor: '[redacted]',
            },
            serializers: {
              req: (request: FastifyRequest) => ({
                method: request.method,
                url: redactUrl(request.url),
                ip: request.ip,
              }),
            },
          },
    genReqId: (request) => {
      const incoming = request.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    trustProxy: trustProxyOption(ctx.config.trustProxy),
    bodyLimit: ctx.config.bodyLimit,
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 200 },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
    return503OnClosing: true,
    frameworkErrors: frameworkError,
    clientErrorHandler: clientError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorateRequest('principal', null);
  app.decorateRequest('rawBody', undefined);
  app.decorateRequest('idempotencyClaim', null);

  // JSON with the raw text kept (webhook receivers verify signatures over exact bytes); an empty body is no body.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    request.rawBody = text;
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      const error = Object.assign(new Error('body: malformed JSON.'), {
        code: 'FST_ERR_CTP_INVALID_JSON_BODY',
        statusCode: 400,
      });
      return done(error, undefined);
    }
    if (text.includes('\\u0000') && holdsNul(parsed)) {
      return done(new ValidationError('body: text may not contain the NUL character (\\u0000).'), undefined);
    }
    done(null, parsed);
  });
  // Any other body (text/plain, what fetch sends when the header is forgotten; a form; no Content-Type at
  // all) is refused unread, naming the header, rather than reaching the schema as a string or a form. An
  // empty one is no body, as for JSON. The test receiver's scope replaces all of this with its own.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('*', (request, _payload, done) => {
    if (request.headers['content-length'] === '0') return done(null, undefined);
    done(new ValidationError(wrongContentType(request.headers['content-type'])), undefined);
  });
  // Nor may a path or query string: PostgreSQL text cannot hold NUL, and no identifier contains one.
  // (Hooks on every request take a callback rather than being async: a promise per hook per request
  // showed in the benchmark's profile.)
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.url.includes('%00'))
      return done(new ValidationError('The URL may not contain a NUL character (%00).'));
    done();
  });

  // Response schemas document the API (OpenAPI) and the e2e suite checks responses against them; they
  // never shape what is sent, which fast-json-stringify would do by dropping or coercing fields.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  registerErrorHandling(app);
  await registerOpenApi(app, ctx.config);
  const metrics = createMetrics(app, ctx.outbox, () => flaggedOperationCounts(ctx.db));

  app.addHook('onSend', (request, reply, payload, done) => {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff');
    addSecurityHeaders(ctx, request, reply);
    if (request.url.startsWith('/api/') || request.url.startsWith('/sandbox/api/'))
      reply.header('cache-control', 'no-store');
    done(null, payload);
  });

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    try {
      await ping(ctx.db);
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ detail: 'Database is not reachable.' });
    }
  });
  app.get('/metrics', async (_request, reply) => {
    reply.type(metrics.contentType);
    return metrics.render();
  });

  await app.register(
    async (api) => {
      for (const routes of SESSION_AND_PUBLIC_ROUTES) await api.register(routes, { ctx });
    },
    { prefix: '/api' },
  );

  for (const [prefix, environment] of [
    ['/api', 'production'],
    ['/sandbox/api', 'sandbox'],
  ] as const) {
    await app.register(
      async (scope) => {
        const options: ApiKeyRouteOptions = { ctx, environment, requireKey: apiKeyAuth(ctx, environment) };
        scope.addHook('onSend', (request, reply, payload, done) => {
          if (request.idempotencyClaim === null) return done(null, payload);
          recordIdempotentResponse(
            ctx,
            request,
            reply.statusCode,
            typeof payload === 'string' ? payload : '',
          ).then(
            () => done(null, payload),
            (error: Error) => done(error),
          );
        });
        for (const routes of API_KEY_ROUTES) await scope.register(routes, options);
      },
      { prefix },
    );
  }

  for (const routes of PAGE_ROUTES) await app.register(routes, { ctx });

  return app;
}
