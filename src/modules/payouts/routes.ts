// Session endpoints GET/POST /api/payouts/ (?environment=sandbox for the sandbox wallet).
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { choiceParam, type Query } from '../../http/pagination.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { parsePositiveAmount } from '../refunds/schemas.ts';
import { Payout, PayoutListQuery, PayoutPage } from './schemas.ts';
import { createPayout, listPayouts } from './service.ts';

const Environment = Type.Union([Type.Literal('production'), Type.Literal('sandbox')]);

const ENVIRONMENTS = ['production', 'sandbox'] as const;

function environmentOf(query: unknown) {
  return choiceParam((query ?? {}) as Query, 'environment', ENVIRONMENTS) ?? 'production';
}

export async function payoutRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get(
    '/payouts/',
    { schema: { querystring: PayoutListQuery, response: { 200: PayoutPage } } },
    async (request) =>
      listPayouts(ctx.db, sessionOf(request).organizationId, environmentOf(request.query), request),
  );

  app.post(
    '/payouts/',
    {
      schema: {
        body: Type.Object({ amount: Type.Unknown(), environment: Type.Optional(Environment) }),
        response: { 201: Payout },
      },
    },
    async (request, reply) => {
      const principal = sessionOf(request);
      const environment = request.body.environment ?? environmentOf(request.query);
      const payout = await createPayout(
        ctx,
        principal.organizationId,
        environment,
        parsePositiveAmount('amount', request.body.amount),
      );
      return reply.code(201).send(payout);
    },
  );
}
