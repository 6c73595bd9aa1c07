// Session endpoints GET/POST /api/payouts/ and GET/PUT/DELETE /api/payouts/destination/
// (?environment=sandbox for the sandbox wallet and its account).
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { choiceParam, type Query } from '../../http/pagination.ts';
import { ErrorResponse, NoContent } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { actorOf } from '../audit/record.ts';
import { EnvironmentQuery } from '../organizations/schemas.ts';
import { parsePositiveAmount } from '../refunds/schemas.ts';
import { getDestination, removeDestination, setDestination } from './destinations.ts';
import { CurrentDestination, DestinationBody, Payout, PayoutListQuery, PayoutPage } from './schemas.ts';
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
        actorOf(request),
      );
      return reply.code(201).send(payout);
    },
  );

  payoutDestinationRoutes(app, ctx);
}

/** The bank account of each environment (registered inside payoutRoutes, behind its session check). */
function payoutDestinationRoutes(app: App, ctx: RouteOptions['ctx']) {
  const scope = (request: FastifyRequest) =>
    [sessionOf(request).organizationId, environmentOf(request.query)] as const;

  app.get(
    '/payouts/destination/',
    { schema: { querystring: EnvironmentQuery, response: { 200: CurrentDestination } } },
    async (request) => getDestination(ctx.db, ...scope(request)),
  );

  app.put(
    '/payouts/destination/',
    {
      schema: { querystring: EnvironmentQuery, body: DestinationBody, response: { 200: CurrentDestination } },
    },
    async (request) => setDestination(ctx, ...scope(request), request.body, actorOf(request)),
  );

  app.delete(
    '/payouts/destination/',
    {
      schema: {
        querystring: EnvironmentQuery,
        response: {
          204: NoContent,
          404: ErrorResponse('No payout destination is set for this environment.'),
        },
      },
    },
    async (request, reply) => {
      await removeDestination(ctx, ...scope(request), actorOf(request));
      return reply.code(204).send();
    },
  );
}
