// Who is calling: an API key (server integrations) or a dashboard session (the web app).
// Each endpoint accepts exactly one kind; the other kind gets 401.
import type { FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { AppContext } from '../context.ts';
import type { Scope } from '../modules/api-keys/scopes.ts';
import { type ApiKeyPrincipal, authenticateApiKey } from '../modules/api-keys/service.ts';
import type { Environment } from '../modules/api-keys/table.ts';
import { KeyAddressBook } from '../modules/audit/key-addresses.ts';
import { clientOf } from '../modules/audit/record.ts';
import { authenticateSession, type SessionPrincipal } from '../modules/auth/service.ts';
import { claimIdempotencyKey } from '../modules/idempotency/service.ts';
import { authorize } from '../modules/members/authorize.ts';
import { ForbiddenError, UnauthorizedError } from './errors.ts';
import { applyRateLimit, FixedWindowLimiter } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: ApiKeyPrincipal | SessionPrincipal | null;
  }
}

export const SESSION_COOKIE = 'kassa_session';

export function readCookie(request: FastifyRequest, name: string): string | null {
  const header = request.headers.cookie;
  if (!header) return null;
  for (const part of header.split(';')) {
    const index = part.indexOf('=');
    if (index > 0 && part.slice(0, index).trim() === name) {
      const value = part.slice(index + 1).trim();
      try {
        return decodeURIComponent(value);
      } catch {
        return value; // malformed percent-encoding: no token of ours, so it fails authentication
      }
    }
  }
  return null;
}

function authorization(request: FastifyRequest): { scheme: string; value: string } | null {
  const header = request.headers.authorization;
  if (!header) return null;
  const index = header.indexOf(' ');
  if (index < 0) return { scheme: header.toLowerCase(), value: '' };
  return { scheme: header.slice(0, index).toLowerCase(), value: header.slice(index + 1).trim() };
}

function apiKeyFrom(request: FastifyRequest): string | null {
  const auth = authorization(request);
  if (auth?.scheme === 'api-key') return auth.value;
  const header = request.headers['api-key'];
  return typeof header === 'string' ? header.trim() : null;
}

export interface ApiKeyRouteAuth {
  /** Read the organization's checkout terms with the key (the principal's `terms`). */
  terms?: boolean;
  /**
   * The route reads the key's status in its own statement and refuses an inactive key
   * (assertKeyStillActive): for a request this says will reach the handler (it passes the route's
   * validation), a key this process authenticated before is served from its cache.
   */
  checksKeyItself?: (request: FastifyRequest) => boolean;
}

export type ApiKeyHandlerFactory = (
  required: readonly Scope[],
  options?: ApiKeyRouteAuth,
) => preHandlerAsyncHookHandler;

/**
 * preHandler for API-key endpoints on one base path (`/api` = production, `/sandbox/api` = sandbox):
 * authenticates, applies the per-key rate limit, then claims the Idempotency-Key of a POST.
 */
export function apiKeyAuth(ctx: AppContext, basePath: Environment): ApiKeyHandlerFactory {
  const limits = ctx.config.rateLimits;
  const limiter = new FixedWindowLimiter(limits.apiKeyPerWindow, limits.apiKeyWindowMs, ctx.clock);
  const addresses = new KeyAddressBook();
  return (required, options = {}) => {
    const handler = async function requireApiKey(request: FastifyRequest, reply: FastifyReply) {
      const raw = apiKeyFrom(request);
      if (raw === null) {
        const auth = authorization(request);
        if (auth?.scheme === 'token' || readCookie(request, SESSION_COOKIE)) {
          throw new UnauthorizedError('This endpoint needs an API key; dashboard sessions are not accepted.');
        }
        throw new UnauthorizedError(
          'Authentication credentials were not provided. Send Authorization: Api-Key <key>.',
        );
      }
      const client = clientOf(request);
      // A first use from an address is audited only once the key is known to be active: looked up.
      const deferTo = options.checksKeyItself?.(request)
        ? (keyId: number) => addresses.knows(keyId, client.ip)
        : undefined;
      let principal = await authenticateApiKey(ctx, raw, basePath, required, {
        terms: options.terms,
        deferTo,
      });
      const limit = limiter.hit(String(principal.keyId));
      // A 429 is for an active key: one served from the cache is looked up before it is refused so.
      if (!limit.allowed && principal.unverified !== null)
        principal = await authenticateApiKey(ctx, raw, basePath, required, { terms: options.terms });
      request.principal = principal;
      applyRateLimit(reply, limit, 'Rate limit exceeded for this API key. Slow down.');
      // The first use of the key from an address is audited (a Set lookup per request otherwise).
      await addresses.note(ctx, principal, client);
      // A replay was sent from here: returning the reply makes Fastify wait for it and skip the handler.
      if (await claimIdempotencyKey(ctx, request, reply, principal)) return reply;
    };
    // Read by the OpenAPI generator to document each route's scopes.
    return Object.assign(handler, { scopes: required });
  };
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** preHandler for dashboard endpoints: `Authorization: Token <token>` or the `kassa_session` cookie. */
export function sessionAuth(ctx: AppContext): preHandlerAsyncHookHandler {
  return async function requireSession(request: FastifyRequest, _reply: FastifyReply) {
    const auth = authorization(request);
    if (apiKeyFrom(request) !== null) {
      throw new UnauthorizedError('This endpoint needs a dashboard session; API keys are not accepted.');
    }
    let token: string | null = null;
    if (auth?.scheme === 'token') token = auth.value;
    else if (auth === null) {
      token = readCookie(request, SESSION_COOKIE);
      if (token !== null && !SAFE_METHODS.has(request.method) && !request.headers['x-requested-with']) {
        throw new ForbiddenError(
          'Cookie-authenticated requests that change data must send X-Requested-With.',
        );
      }
    }
    if (!token) throw new UnauthorizedError('Authentication credentials were not provided.');
    const principal = await authenticateSession(ctx, token);
    if (!principal) throw new UnauthorizedError('Invalid or expired session token.');
    request.principal = principal;
    // The route's permission (members/permissions.ts), the two-factor requirement, recent authentication.
    authorize(principal, request.method, request.routeOptions.url ?? '', ctx.clock());
  };
}

export function apiKeyOf(request: FastifyRequest): ApiKeyPrincipal {
  if (request.principal?.kind !== 'api_key') throw new UnauthorizedError();
  return request.principal;
}

export function sessionOf(request: FastifyRequest): SessionPrincipal {
  if (request.principal?.kind !== 'session') throw new UnauthorizedError();
  return request.principal;
}
