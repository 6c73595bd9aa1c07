// CSV exports for the dashboard (session): GET /api/exports/{payments,refunds,payouts,wallet}/ with the
// list pages' filters and ?environment=sandbox for test mode. The filters are checked before the first
// byte, so a bad one is still a 400 {detail}; then rows stream in batches (constant memory).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import type { Clock } from '../../context.ts';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { choiceParam, isoParam, type Query, queryOf } from '../../http/pagination.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import type { Environment } from '../api-keys/table.ts';
import { parseListQuery } from '../payments/list.ts';
import { PaymentListQuery } from '../payments/schemas.ts';
import { parseRefundFilters } from '../refunds/list.ts';
import { DashboardRefundListQuery } from '../refunds/schemas.ts';
import { type CsvSource, csvStream } from './csv.ts';
import { paymentsSource, payoutsSource, refundsSource, walletSource } from './sources.ts';

const tags = ['Exports'];

const CsvResponse = {
  200: {
    description: 'CSV (RFC 4180), a header row then one row per record, newest first.',
    content: { 'text/csv': { schema: Type.String() } },
  },
};

const Param = (description: string) => Type.Optional(Type.Unknown({ description }));
const EnvironmentParam = Param('production (default) or sandbox.');

function environmentOf(query: Query): Environment {
  return choiceParam<Environment>(query, 'environment', ['production', 'sandbox']) ?? 'production';
}

function sendCsv<Row extends { id: number }>(
  reply: FastifyReply,
  clock: Clock,
  what: string,
  environment: Environment,
  source: CsvSource<Row>,
) {
  const day = clock().toISOString().slice(0, 10);
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="kassa-${what}-${environment}-${day}.csv"`)
    .send(csvStream(source));
}

export async function exportRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));
  const org = (request: FastifyRequest) => sessionOf(request).organizationId;

  app.get(
    '/exports/payments/',
    { schema: { tags, summary: 'Payments as CSV', querystring: PaymentListQuery, response: CsvResponse } },
    async (request, reply) => {
      const filters = parseListQuery(queryOf(request));
      const source = paymentsSource(ctx.db, org(request), filters);
      return sendCsv(reply, ctx.clock, 'payments', filters.environment, source);
    },
  );

  app.get(
    '/exports/refunds/',
    {
      schema: {
        tags,
        summary: 'Refunds as CSV',
        querystring: DashboardRefundListQuery,
        response: CsvResponse,
      },
    },
    async (request, reply) => {
      const query = queryOf(request);
      const environment = environmentOf(query);
      const source = refundsSource(ctx.db, org(request), environment, parseRefundFilters(query));
      return sendCsv(reply, ctx.clock, 'refunds', environment, source);
    },
  );

  app.get(
    '/exports/payouts/',
    {
      schema: {
        tags,
        summary: 'Payouts as CSV',
        querystring: Type.Object({ environment: EnvironmentParam }),
        response: CsvResponse,
      },
    },
    async (request, reply) => {
      const environment = environmentOf(queryOf(request));
      return sendCsv(
        reply,
        ctx.clock,
        'payouts',
        environment,
        payoutsSource(ctx.db, org(request), environment),
      );
    },
  );

  app.get(
    '/exports/wallet/',
    {
      schema: {
        tags,
        summary: 'The wallet ledger as CSV',
        querystring: Type.Object({
          environment: EnvironmentParam,
          created_at__gte: Param('ISO 8601: on or after.'),
          created_at__lte: Param('ISO 8601: on or before.'),
        }),
        response: CsvResponse,
      },
    },
    async (request, reply) => {
      const query = queryOf(request);
      const environment = environmentOf(query);
      const source = await walletSource(ctx.db, org(request), environment, {
        createdFrom: isoParam(query, 'created_at__gte'),
        createdTo: isoParam(query, 'created_at__lte'),
      });
      return sendCsv(reply, ctx.clock, 'wallet', environment, source);
    },
  );
}
