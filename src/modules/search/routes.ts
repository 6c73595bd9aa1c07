// GET /api/search/ (session): the dashboard's search box.
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { choiceParam, type Query } from '../../http/pagination.ts';
import { Environment, Money, Shape, Timestamp } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { search } from './service.ts';

const SearchResult = Shape({
  type: Type.Enum(['payment', 'refund']),
  id: Type.String({ description: 'The payment (TX…) or refund (RF…) id.' }),
  payment_id: Type.String({ description: 'The payment itself, or the refunded payment.' }),
  summary: Type.String({ description: "The customer's email, or the refund's payment and reason." }),
  status: Type.String(),
  amount: Money,
  currency: Type.String(),
  environment: Environment,
  created_at: Timestamp,
});

const SearchAnswer = Shape(
  { query: Type.String(), environment: Environment, results: Type.Array(SearchResult) },
  'At most 10 payments, then at most 10 refunds, each newest first.',
);

export async function searchRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));
  app.get(
    '/search/',
    {
      schema: {
        summary: 'Search payments and refunds',
        description:
          'Payments by payment or checkout id, customer email or a card’s last 4 digits; refunds by refund or payment id or reason.',
        querystring: Type.Object({
          q: Type.Optional(Type.Unknown({ description: 'What to look for (1 to 200 characters).' })),
          environment: Type.Optional(Type.Unknown({ description: 'production (default) or sandbox.' })),
        }),
        response: { 200: SearchAnswer },
      },
    },
    async (request) => {
      const query = request.query as Query;
      const environment =
        choiceParam(query, 'environment', ['production', 'sandbox'] as const) ?? 'production';
      return search(ctx.db, sessionOf(request).organizationId, environment, query.q);
    },
  );
}
