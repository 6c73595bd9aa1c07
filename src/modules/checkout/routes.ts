// Checkout endpoints. API keys (under /api and /sandbox/api): POST /checkout/create/ and
// POST /checkout/sync-status/ (by token without a key, or by checkout_id with a key of that base path).
// Public, authorised by the checkout token (under /api): GET /checkout/{token}/, POST .../pay/, .../cancel/.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { apiKeyOf } from '../../http/auth.ts';
import { ValidationError } from '../../http/errors.ts';
import type { ApiKeyRouteOptions, App, RouteOptions } from '../../http/types.ts';
import { cancelCheckout, syncCheckoutById, syncCheckoutByToken } from './finish.ts';
import { getHostedCheckout } from './hosted.ts';
import { payCheckout } from './pay.ts';
import { limitPublicCaller } from './rate-limit.ts';
import { CreateCheckoutBody, PayBody, SyncStatusBody, TokenParam } from './schemas.ts';
import { createCheckout } from './service.ts';

/** sync-status by checkout_id identifies the merchant's checkout, so it needs the merchant's key. */
function namesCheckoutId(body: unknown): boolean {
  return typeof body === 'object' && body !== null && 'checkout_id' in body && !('token' in body);
}

export async function checkoutApiRoutes(app: App, { ctx, environment, requireKey }: ApiKeyRouteOptions) {
  app.post(
    '/checkout/create/',
    { preValidation: requireKey(['checkout:create']), schema: { body: CreateCheckoutBody } },
    async (request, reply) => {
      const key = apiKeyOf(request);
      return reply.code(201).send(await createCheckout(ctx, key.organizationId, environment, request.body));
    },
  );

  const keyForSync = requireKey(['checkout:create', 'payments:read']);
  app.post(
    '/checkout/sync-status/',
    {
      preValidation: async function authoriseSync(request: FastifyRequest, reply: FastifyReply) {
        if (namesCheckoutId(request.body)) await keyForSync.call(this, request, reply);
        else limitPublicCaller(ctx, request, reply, tokenOf(request.body));
      },
      schema: {
        body: SyncStatusBody,
        description:
          'Asks the provider and applies the outcome. Send {token} with no authentication (the hosted page), ' +
          "or {checkout_id} with an API key of the checkout's environment (scope checkout:create or payments:read).",
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

export async function checkoutPublicRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('onRequest', async (request, reply) =>
    limitPublicCaller(ctx, request, reply, (request.params as { token?: string }).token ?? ''),
  );

  app.get('/checkout/:token/', { schema: { params: TokenParam } }, async (request) =>
    getHostedCheckout(ctx, request.params.token),
  );

  app.post('/checkout/:token/pay/', { schema: { params: TokenParam, body: PayBody } }, async (request) =>
    payCheckout(ctx, request.params.token, request.body),
  );

  app.post('/checkout/:token/cancel/', { schema: { params: TokenParam } }, async (request) =>
    cancelCheckout(ctx, request.params.token),
  );
}

function tokenOf(body: unknown): string {
  const token = (body as { token?: unknown } | null)?.token;
  return typeof token === 'string' ? token.slice(0, 100) : '';
}
