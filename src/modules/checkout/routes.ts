// Checkout endpoints. API keys (under /api and /sandbox/api): POST /checkout/create/ and
// POST /checkout/sync-status/ (by token without a key, or by checkout_id with a key of that base path).
// Public, authorised by the checkout token (under /api): GET /checkout/{token}/, POST .../pay/, .../cancel/.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Executor } from '../../db/database.ts';
import { apiKeyOf } from '../../http/auth.ts';
import { DomainError, ValidationError } from '../../http/errors.ts';
import { PUBLIC_BODY_LIMIT } from '../../http/public.ts';
import { asksProvider, ErrorResponse, limitedPerAddress } from '../../http/schemas.ts';
import type { ApiKeyRouteOptions, App, RouteOptions } from '../../http/types.ts';
import { CachedKeyNotConfirmed, lookUpCachedKey } from '../api-keys/service.ts';
import { recordIdempotentResponseIn } from '../idempotency/service.ts';
import { assertAddressMayPay, countDecline } from './card-testing.ts';
import { cancelCheckout, syncCheckoutById, syncCheckoutByToken } from './finish.ts';
import { getHostedCheckout } from './hosted.ts';
import { payCheckout } from './pay.ts';
import { countUnknownToken, limitPublicCaller } from './rate-limit.ts';
import {
  CheckoutCreated,
  type CheckoutCreatedBody,
  CreateCheckoutBody,
  CreateCheckoutDocumented,
  HostedCheckout,
  PayBody,
  PayResult,
  SyncStatusBody,
  SyncStatusResult,
  TokenParam,
} from './schemas.ts';
import { createCheckout } from './service.ts';

/** sync-status by checkout_id identifies the merchant's checkout, so it needs the merchant's key. */
function namesCheckoutId(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'checkout_id' in body && !('token' in body);
}

const CREATE_SCOPES = ['checkout:create'] as const;

/** Whether a checkout creation will reach the insert that checks a cached key (see the route). */
function reachesTheInsert(request: FastifyRequest): boolean {
  if (request.headers['idempotency-key'] !== undefined) return false;
  const validate = request.getValidationFunction('body');
  return validate !== undefined && validate(request.body) === true;
}

export async function checkoutApiRoutes(app: App, { ctx, environment, requireKey }: ApiKeyRouteOptions) {
  app.post(
    '/checkout/create/',
    {
      // The insert checks the key and the organization's terms itself (insertSessionIfKeyHolds), so a
      // key this process knows may be served from its cache, with the terms it holds, for a request that
      // will reach that insert: no Idempotency-Key to claim (a write before the handler), and a body the
      // route's schema accepts (else the 400 would be answered before any statement read the key).
      preValidation: requireKey(CREATE_SCOPES, { terms: true, checksKeyItself: reachesTheInsert }),
      schema: {
        operationId: 'createCheckoutSession',
        summary: 'Create a hosted checkout session',
        body: CreateCheckoutBody,
        ...CreateCheckoutDocumented,
        response: {
          201: CheckoutCreated,
          403: ErrorResponse('The key lacks the checkout:create scope, or the organization is not active.'),
        },
      },
    },
    async (request, reply) => {
      const key = apiKeyOf(request);
      // The session and the Idempotency-Key's answer commit together: a retry never creates a second one.
      // Without a key to answer, the session's insert is the only write: it commits on its own.
      const afterCreate =
        request.idempotencyClaim === null
          ? null
          : (trx: Executor, body: CheckoutCreatedBody) => recordIdempotentResponseIn(trx, request, 201, body);
      let created: CheckoutCreatedBody;
      try {
        created = await createCheckout(ctx, key, environment, request.body, afterCreate);
      } catch (error) {
        // Only a refusal is tried again: a database error may come after the insert committed.
        const refusal = error instanceof CachedKeyNotConfirmed || error instanceof DomainError;
        if (key.unverified === null || !refusal) throw error;
        // Served from the cache and not confirmed (the insert found the key or the terms changed, or the
        // request was refused before it; nothing was written): looked up, and answered from that.
        const looked = await lookUpCachedKey(ctx, key, CREATE_SCOPES, { terms: true });
        request.principal = looked;
        created = await createCheckout(ctx, looked, environment, request.body, afterCreate);
      }
      return reply.code(201).send(created);
    },
  );

  const syncScopes = ['checkout:create', 'payments:read'] as const;
  const keyForSync = requireKey(syncScopes);
  app.post(
    '/checkout/sync-status/',
    {
      bodyLimit: PUBLIC_BODY_LIMIT,
      onResponse: async (request, reply) => {
        if (reply.statusCode === 404 && !namesCheckoutId(request.body)) countUnknownToken(ctx, request);
      },
      // Documented as an API-key route whose key is optional (the OpenAPI generator reads these marks).
      preValidation: Object.assign(
        async function authoriseSync(this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
          if (namesCheckoutId(request.body)) return keyForSync.call(this, request, reply);
          limitPublicCaller(ctx, request, reply, tokenOf(request.body));
        },
        { scopes: syncScopes, keyOptional: true },
      ),
      schema: {
        ...asksProvider,
        operationId: 'syncCheckoutStatus',
        summary: "Ask the provider for a checkout's outcome",
        body: SyncStatusBody,
        response: {
          200: SyncStatusResult,
          404: ErrorResponse(
            "No checkout has this token, or this key's environment has no checkout with this checkout_id.",
          ),
        },
        description:
          'Asks the provider and applies the outcome. Send {token} with no authentication (the hosted page), ' +
          "or {checkout_id} with an API key of the checkout's environment.",
      },
    },
    async (request) => {
      const { token, checkout_id: checkoutId } = request.body;
      if (token !== undefined && checkoutId !== undefined) {
        throw new ValidationError('checkout_id: send either token or checkout_id, not both.');
      }
      if (token !== undefined) return syncCheckoutByToken(ctx, token);
      if (checkoutId === undefined) throw new ValidationError('token: this field is required.');
      const key = apiKeyOf(request);
      return syncCheckoutById(ctx, key.organizationId, environment, checkoutId);
    },
  );
}

const CHECKOUT_NOT_FOUND = ErrorResponse('No checkout has this token.');
const CHECKOUT_FINISHED = ErrorResponse(
  'The checkout has expired, been paid, failed (after too many declined cards, say) or been canceled: start a new one.',
);

export async function checkoutPublicRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('onRequest', async (request, reply) =>
    limitPublicCaller(ctx, request, reply, (request.params as { token?: string }).token ?? ''),
  );
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode === 404) countUnknownToken(ctx, request);
  });

  app.get(
    '/checkout/:token/',
    // Stripe's client secret, a signup's customer and setup, a trial's waiting setup: read for the page.
    {
      schema: {
        ...asksProvider,
        ...limitedPerAddress,
        params: TokenParam,
        response: { 200: HostedCheckout, 404: CHECKOUT_NOT_FOUND },
      },
    },
    async (request, reply) => {
      const { checkout, retryAfterS } = await getHostedCheckout(ctx, request.params.token);
      // Stripe did not answer the open of the payment form: the page reads again after this (a 200 still,
      // since the read itself succeeded and the next one opens it again; see provider-form.ts).
      if (retryAfterS !== null) reply.header('retry-after', String(retryAfterS));
      return checkout;
    },
  );

  app.post(
    '/checkout/:token/pay/',
    {
      bodyLimit: PUBLIC_BODY_LIMIT,
      // A signup's customer is made before its card is charged or saved (the charge itself is a
      // write-ahead call: no answer is its `unknown` outcome, not a 503).
      schema: {
        ...asksProvider,
        ...limitedPerAddress,
        params: TokenParam,
        body: PayBody,
        response: {
          200: PayResult,
          404: CHECKOUT_NOT_FOUND,
          409: ErrorResponse(
            "A card attempt for this checkout is already in progress, or its payment awaits the bank's decision: check its status instead.",
          ),
          410: CHECKOUT_FINISHED,
          429: ErrorResponse(
            'Too many declined cards from this address, or too many requests: retry after Retry-After seconds.',
          ),
        },
      },
    },
    async (request, reply) => {
      assertAddressMayPay(ctx, request, reply);
      const result = await payCheckout(ctx, request.params.token, request.body);
      countDecline(ctx, request, result.attempt?.status);
      return result;
    },
  );

  app.post(
    '/checkout/:token/cancel/',
    {
      bodyLimit: PUBLIC_BODY_LIMIT,
      // The payment is read and stopped at the provider before the checkout is canceled.
      schema: {
        ...asksProvider,
        ...limitedPerAddress,
        params: TokenParam,
        response: {
          200: SyncStatusResult,
          404: CHECKOUT_NOT_FOUND,
          409: ErrorResponse(
            "A card attempt for this checkout is in progress, or its payment awaits the bank's decision: it cannot be canceled now.",
          ),
          410: CHECKOUT_FINISHED,
        },
      },
    },
    async (request) => cancelCheckout(ctx, request.params.token),
  );
}

function tokenOf(body: unknown): string {
  const token = (body as { token?: unknown } | null)?.token;
  return typeof token === 'string' ? token.slice(0, 100) : '';
}
