// The OpenAPI 3.1 document at /api/openapi.json, generated from the route schemas (the docs site's
// API reference at /docs/api renders it). Security, scopes, tags, an operationId and a summary are added to
// each route here, from how the route authenticates, so no route repeats them; openapi-document.ts then
// adds the error responses, the named component schemas and the webhooks to the built document.
import swagger from '@fastify/swagger';
import type { FastifySchema, RouteOptions } from 'fastify';
import { requireRule } from '../modules/members/permissions.ts';
import { PERMISSIONS } from '../modules/members/roles.ts';
import { completeDocument } from './openapi-document.ts';
import { SUMMARIES } from './openapi-summaries.ts';
import type { App } from './types.ts';

const PUBLIC_PATHS = [
  /^\/api\/auth\/login\/?$/,
  /^\/api\/auth\/(login\/2fa|accept-invite|password-reset|password-reset\/confirm)\/?$/,
  /^\/api\/checkout\/:token/,
  /^\/api\/payment-links\/public\//,
  /^\/api\/subscriptions\/public\//,
  /^\/api\/v1\/webhooks\//,
  /^\/api\/provider\/webhooks\//,
  /^\/api\/provider\/simulator\/challenges\//,
  /^\/api\/openapi\.json$/,
];

/** What an API-key preValidation/preHandler tells the generator (see apiKeyAuth). */
interface ScopedHandler {
  scopes?: readonly string[];
  /** The route also answers without a key (sync-status by checkout token). */
  keyOptional?: boolean;
}

function apiKeyHandler(route: RouteOptions): ScopedHandler | null {
  const handlers = [route.preValidation, route.preHandler].flat().filter(Boolean) as ScopedHandler[];
  return handlers.find((handler) => handler.scopes) ?? null;
}

/** Either header carries the key; a key needs any one of the scopes (one requirement per alternative). */
function apiKeySecurity(scopes: readonly string[], keyOptional: boolean): Record<string, string[]>[] {
  const alternatives = scopes.length ? scopes.map((scope) => [scope]) : [[]];
  return [
    ...(keyOptional ? [{}] : []),
    ...['ApiKey', 'ApiKeyHeader'].flatMap((scheme) => alternatives.map((needed) => ({ [scheme]: needed }))),
  ];
}

function document(route: RouteOptions): void {
  // The automatic HEAD twin of a GET shares its schema object: documenting it again would repeat the notes.
  if (route.method === 'HEAD') return;
  const schema: FastifySchema & Record<string, unknown> = (route.schema ?? {}) as FastifySchema &
    Record<string, unknown>;
  route.schema = schema;
  if (!route.url.startsWith('/api/') || route.url.startsWith('/sandbox/')) {
    schema.hide = true;
    return;
  }
  name(route, schema);
  const keyAuth = apiKeyHandler(route);
  if (keyAuth?.scopes) {
    const scopes = keyAuth.scopes;
    schema.security = apiKeySecurity(scopes, keyAuth.keyOptional === true);
    schema.tags ??= ['API key'];
    const note = scopes.length ? `Scopes: ${scopes.join(' or ')}.` : '';
    schema.description = [schema.description, note, 'Sandbox keys use the same path under /sandbox/api/.']
      .filter(Boolean)
      .join(' ');
  } else if (PUBLIC_PATHS.some((pattern) => pattern.test(route.url))) {
    schema.security = [];
    schema.tags ??= ['Public'];
    schema.description = [schema.description, 'No credentials needed.'].filter(Boolean).join(' ');
  } else {
    schema.security = [{ SessionToken: [] }, { SessionCookie: [] }];
    schema.tags ??= ['Dashboard session'];
    // Every session route has its permission in members/permissions.ts; the app does not start otherwise.
    const rule = requireRule(String(route.method), route.url);
    schema['x-kassa-permission'] = rule.permission;
    schema['x-kassa-recent-auth'] = rule.recent;
    const roles = PERMISSIONS[rule.permission].roles.join(', ');
    const note = `Permission: ${rule.permission} (roles: ${roles}).${rule.recent ? ' Needs a login or POST /api/auth/confirm/ within the last 10 minutes; otherwise 403 with reauth_required.' : ''}`;
    schema.description = [schema.description, note].filter(Boolean).join(' ');
  }
}

const VERBS: Record<string, string> = {
  GET: 'get',
  POST: 'post',
  PUT: 'put',
  PATCH: 'update',
  DELETE: 'delete',
};

/** A readable default for a route without its own: `getProductsById` for GET /api/products/:id/. */
function operationIdFor(method: string, url: string): string {
  const words = url
    .split('/')
    .filter((segment) => segment && segment !== 'api')
    .map((segment) => (segment.startsWith(':') ? `by-${segment.slice(1)}` : segment))
    .flatMap((segment) => segment.split(/[-_]/))
    .map((word) => word[0].toUpperCase() + word.slice(1));
  return (VERBS[method] ?? method.toLowerCase()) + words.join('');
}

/** The route's own summary, else the one in SUMMARIES, else the first sentence of its description. */
function summaryFor(method: string, url: string, description: unknown): string | undefined {
  return (
    SUMMARIES[`${method} ${url}`] ??
    (typeof description === 'string' ? /^[^.;]+/.exec(description)?.[0] : undefined)
  );
}

function name(route: RouteOptions, schema: Record<string, unknown>): void {
  const method = String(route.method);
  schema.operationId ??= operationIdFor(method, route.url);
  schema.summary ??= summaryFor(method, route.url, schema.description);
}

/** Both servers' {origin} default to this instance's public URL (KASSA_PUBLIC_URL, else its own port). */
function withOrigin(document: Record<string, unknown>, origin: string): Record<string, unknown> {
  const servers = document.servers as { variables?: { origin?: { default: string } } }[] | undefined;
  for (const server of servers ?? []) if (server.variables?.origin) server.variables.origin.default = origin;
  return document;
}

/**
 * `config` is read when the document is first built (the first request for it), not now: a service
 * started on port 0 learns its public URL only once it listens.
 */
export async function registerOpenApi(app: App, config: { publicUrl: string }): Promise<void> {
  app.addHook('onRoute', (route) => document(route as RouteOptions));
  await app.register(swagger, {
    transformObject: (built) => withOrigin(completeDocument(built), config.publicUrl),
    openapi: {
      openapi: '3.1.0',
      servers: [
        {
          url: '{origin}',
          description: 'Production: production API keys and dashboard sessions.',
          variables: { origin: { default: 'http://localhost', description: 'KASSA_PUBLIC_URL' } },
        },
        {
          url: '{origin}/sandbox',
          description: 'Sandbox: sandbox API keys, for the API-key operations only.',
          variables: { origin: { default: 'http://localhost', description: 'KASSA_PUBLIC_URL' } },
        },
      ],
      tags: [
        { name: 'API key', description: 'Server-to-server calls with an API key.' },
        { name: 'Public', description: 'No credentials: hosted pages, login, receivers.' },
        { name: 'Dashboard session', description: 'The dashboard, with a session token or cookie.' },
        { name: 'Webhooks', description: 'The webhook endpoint and its deliveries.' },
        { name: 'Webhook events', description: 'What Kassa POSTs to your endpoint.' },
        { name: 'Exports', description: 'CSV downloads for the dashboard.' },
        { name: 'Development', description: 'The development mailbox (no SMTP configured).' },
      ],
      info: {
        title: 'Kassa API',
        version: '1.1.0',
        license: { name: 'MIT', identifier: 'MIT' },
        // Self-hosted: whoever runs the instance answers for it; the guides are at /docs on it.
        contact: { name: 'The operator of this Kassa instance' },
        description:
          'Hosted checkout, payments, refunds and the merchant dashboard API. Errors are always {"detail": "..."}. ' +
          'API-key endpoints also answer under /sandbox/api/ for sandbox keys.',
      },
      components: {
        securitySchemes: {
          ApiKey: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Authorization: Api-Key <key>',
          },
          ApiKeyHeader: { type: 'apiKey', in: 'header', name: 'Api-Key' },
          SessionToken: {
            type: 'apiKey',
            in: 'header',
            name: 'Authorization',
            description: 'Authorization: Token <token>',
          },
          SessionCookie: { type: 'apiKey', in: 'cookie', name: 'kassa_session' },
        },
      },
    },
  });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());
}
