// Payment endpoints. API keys (under /api and /sandbox/api): GET /transactions/ and /transactions/{id}/.
// Dashboard sessions: GET /api/payments/ and GET /api/payments/{id}/.
// Public: POST /api/provider/webhooks/{provider}/ (the body only names ids to re-read from the provider;
// signed, small and rate limited: provider-webhook-guard.ts).
import { Type } from 'typebox';
import { apiKeyOf, sessionAuth, sessionOf } from '../../http/auth.ts';
import { PUBLIC_BODY_LIMIT } from '../../http/public.ts';
import { asksProvider, ErrorResponse, limitedPerAddress } from '../../http/schemas.ts';
import type { ApiKeyRouteOptions, App, RouteOptions } from '../../http/types.ts';
import { listPaymentsForKey } from './api-list.ts';
import { listPayments } from './list.ts';
import { limitProviderWebhook, verifyProviderWebhook } from './provider-webhook-guard.ts';
import {
  DashboardPayment,
  Payment,
  PaymentListDocumented,
  PaymentListQuery,
  PaymentPage,
  ProviderWebhookReceived,
  TransactionListDocumented,
  TransactionListQuery,
  TransactionPage,
} from './schemas.ts';
import { getPaymentForDashboard, getPaymentForKey } from './service.ts';
import { handleProviderWebhook } from './sync.ts';

const PaymentIdParam = Type.Object({ id: Type.String() });

export async function paymentApiRoutes(app: App, { ctx, environment, requireKey }: ApiKeyRouteOptions) {
  app.get(
    '/transactions/',
    {
      preValidation: requireKey(['payments:read']),
      schema: {
        operationId: 'listTransactions',
        summary: 'List payments',
        description: "The organization's payments in the key's environment, newest first.",
        querystring: TransactionListQuery,
        ...TransactionListDocumented,
        response: { 200: TransactionPage },
      },
    },
    async (request) => listPaymentsForKey(ctx, apiKeyOf(request).organizationId, environment, request),
  );

  app.get(
    '/transactions/:id/',
    {
      // The statement reads the key's status with the payment, so a key this process knows may be served
      // from its cache: the path's one parameter is any string, so every request that gets here reaches
      // the handler and its check.
      preValidation: requireKey(['payments:read'], { checksKeyItself: () => true }),
      schema: {
        operationId: 'getTransaction',
        summary: 'Get a payment',
        params: PaymentIdParam,
        response: {
          200: Payment,
          404: ErrorResponse("No payment of this organization in the key's environment has this id."),
        },
      },
    },
    async (request) => getPaymentForKey(ctx, apiKeyOf(request), environment, request.params.id),
  );
}

export async function paymentSessionRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get(
    '/payments/',
    { schema: { querystring: PaymentListQuery, ...PaymentListDocumented, response: { 200: PaymentPage } } },
    async (request) => listPayments(ctx, sessionOf(request).organizationId, request),
  );

  app.get(
    '/payments/:id/',
    {
      schema: {
        params: PaymentIdParam,
        response: {
          200: DashboardPayment,
          404: ErrorResponse('No payment of this organization has this id.'),
        },
      },
    },
    async (request) => getPaymentForDashboard(ctx, sessionOf(request).organizationId, request.params.id),
  );
}

export async function providerWebhookRoutes(app: App, { ctx }: RouteOptions) {
  app.post(
    '/provider/webhooks/:provider/',
    {
      bodyLimit: PUBLIC_BODY_LIMIT,
      onRequest: async (request, reply) => limitProviderWebhook(ctx, request, reply),
      preHandler: async (request) => verifyProviderWebhook(ctx, request.params.provider, request),
      // What the webhook names is re-read from the provider; a 503 has the provider deliver it again.
      schema: {
        ...asksProvider,
        ...limitedPerAddress,
        params: Type.Object({ provider: Type.String() }),
        response: {
          200: ProviderWebhookReceived,
          404: ErrorResponse('No provider of this name is configured ("Unknown provider.").'),
        },
      },
    },
    async (request) => handleProviderWebhook(ctx, request.params.provider, request.rawBody, request.headers),
  );
}
