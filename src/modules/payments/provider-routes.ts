// Public endpoints a provider's side of the wire calls, beside the simulator's provider-webhook route:
// POST /api/provider/simulator/challenges/{id}/ is the simulator's 3-D Secure step (what a bank's page
// would be), answered from the hosted page; the challenge id in the attempt's next action is the
// capability. POST /api/provider/webhooks/stripe/ takes Stripe's signed events (stripe-webhook.ts).
import { Type } from 'typebox';
import { sessionAuth } from '../../http/auth.ts';
import { NotFoundError } from '../../http/errors.ts';
import { STRIPE_WEBHOOK_BODY_LIMIT } from '../../http/public.ts';
import { asksProvider, ErrorResponse, limitedPerAddress, Shape } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { limitPublicCaller } from '../checkout/rate-limit.ts';
import { syncSetupById } from '../subscriptions/signup.ts';
import { PaymentStatus } from './schemas.ts';
import * as store from './store.ts';
import { handleStripeWebhook } from './stripe-webhook.ts';
import { syncPayment } from './sync.ts';

const ChallengeAnswerBody = Type.Object({
  answer: Type.Union([Type.Literal('approve'), Type.Literal('fail')], {
    description: "The customer's answer to the 3-D Secure step.",
  }),
});

const ChallengeAnswered = Shape(
  {
    status: Type.Enum(['approved', 'failed', 'abandoned']),
    payment_status: Type.Union([PaymentStatus, Type.Null()], {
      description: 'The payment after the answer (null for a card being saved).',
    }),
  },
  'The challenge as answered (answering again returns the first answer).',
);

const StripeWebhookReceived = Shape({
  received: Type.Literal(true),
  duplicate: Type.Boolean({ description: 'The event id was handled before: nothing was done again.' }),
  payments: Type.Integer({ description: 'Payments re-fetched from Stripe that changed.' }),
  refunds: Type.Integer({ description: 'Refunds re-fetched from Stripe that changed.' }),
});

const ProviderStatus = Shape(
  {
    production_provider: Type.Enum(['simulator', 'stripe']),
    simulated_production: Type.Boolean({
      description:
        "Production's provider is the simulator (development, or KASSA_ALLOW_SIMULATOR in production): its payments move no money.",
    }),
  },
  "Who processes this service's payments (the sandbox always uses the simulator).",
);

export async function providerRoutes(app: App, { ctx }: RouteOptions) {
  app.post(
    '/provider/webhooks/stripe/',
    {
      // Not PUBLIC_BODY_LIMIT: Stripe's events embed whole objects (http/public.ts says why 512 KiB).
      bodyLimit: STRIPE_WEBHOOK_BODY_LIMIT,
      // Each event's object is re-read from Stripe; a 503 has Stripe deliver the event again.
      schema: {
        ...asksProvider,
        response: {
          200: StripeWebhookReceived,
          404: ErrorResponse('Stripe is not configured on this service ("Unknown provider.").'),
        },
        description:
          'Stripe webhook endpoint: Stripe-Signature verified over the raw body (300 s tolerance), each event handled once. A body over 512 KiB is a 413 and changes nothing.',
      },
    },
    async (request) => handleStripeWebhook(ctx, request.rawBody, request.headers),
  );

  app.get(
    '/provider/status/',
    { preValidation: sessionAuth(ctx), schema: { response: { 200: ProviderStatus } } },
    async () => {
      const production = ctx.providers.forEnvironment('production').name;
      return {
        production_provider: production,
        simulated_production: production === 'simulator',
      };
    },
  );

  app.post(
    '/provider/simulator/challenges/:id/',
    {
      onRequest: async (request, reply) =>
        limitPublicCaller(ctx, request, reply, (request.params as { id?: string }).id?.slice(0, 64) ?? ''),
      // The answered payment (or trial setup) is read back from the provider at once.
      schema: {
        ...asksProvider,
        ...limitedPerAddress,
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        body: ChallengeAnswerBody,
        response: {
          200: ChallengeAnswered,
          404: ErrorResponse('The simulator has no challenge with this id.'),
        },
        description: "The simulator's 3-D Secure step: the hosted page sends the customer's answer.",
      },
    },
    async (request) => {
      const result = await ctx.providers.simulator.answerChallenge(request.params.id, request.body.answer);
      if (!result) throw new NotFoundError('Challenge not found.');
      if (result.target !== 'payment') {
        // A card being saved (a trial signup): its subscription is made as soon as the bank approves.
        await syncSetupById(ctx, result.targetId);
        return { status: result.status, payment_status: null };
      }
      // The bank answered: the payment takes the answer at once, as a webhook would bring it.
      const payment = await store.paymentByProviderId(ctx.db, 'simulator', result.targetId);
      if (payment) await syncPayment(ctx, payment);
      const after = payment ? await store.paymentStatusOf(ctx.db, payment.id) : null;
      return { status: result.status, payment_status: after };
    },
  );
}
