// Refund endpoints. API keys (under /api and /sandbox/api): POST /transactions/{id}/refund/,
// GET /refunds/, GET /refunds/{id}/. Dashboard sessions: POST /api/refunds/verification-code/ and
// POST /api/refunds/ (which answers 405 to an API key, as GET /refunds/ on that path is theirs).

import type { FastifyRequest } from 'fastify';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { MethodNotAllowedError, NotFoundError } from '../../http/errors.ts';
import { choiceParam, queryOf } from '../../http/pagination.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';
import { ErrorResponse } from '../../http/schemas.ts';
import type { ApiKeyRouteOptions, App, RouteOptions } from '../../http/types.ts';
import { actorOf } from '../audit/record.ts';
import { recordIdempotentResponseIn } from '../idempotency/service.ts';
import { listRefunds, presentRefund } from './list.ts';
import {
  ApiRefundBody,
  DashboardRefundBody,
  DashboardRefundListDocumented,
  DashboardRefundListQuery,
  parseReason,
  parseRefundAmount,
  Refund,
  RefundBodyDocumented,
  RefundCreated,
  RefundIdParam,
  RefundListDocumented,
  RefundListQuery,
  RefundPage,
  VerificationCodeSent,
} from './schemas.ts';
import { createRefund, presentCreatedRefund } from './service.ts';
import * as store from './store.ts';
import { checkVerificationCode, consumeVerificationCode, issueVerificationCode } from './verification.ts';

const WRITE = ['refunds:write', 'payments:write'] as const;
const READ = ['refunds:read', 'payments:read'] as const;

function carriesApiKey(request: FastifyRequest): boolean {
  return /^api-key\s/i.test(request.headers.authorization ?? '') || request.headers['api-key'] !== undefined;
}

/** POST /refunds/ is for the dashboard only: an API key gets 405, whatever the base path. */
async function refuseApiKeys(request: FastifyRequest) {
  if (carriesApiKey(request)) throw new MethodNotAllowedError(request.method, ['GET']);
}

export async function refundApiRoutes(app: App, { ctx, environment, requireKey }: ApiKeyRouteOptions) {
  app.post(
    '/transactions/:id/refund/',
    {
      preValidation: requireKey(WRITE),
      schema: {
        operationId: 'createRefund',
        summary: 'Refund a payment, in full or in part',
        params: RefundIdParam,
        body: ApiRefundBody,
        ...RefundBodyDocumented,
        response: {
          200: RefundCreated,
          404: ErrorResponse('No payment of this organization and environment has this id.'),
        },
      },
    },
    async (request) => {
      const principal = request.principal;
      if (principal?.kind !== 'api_key') throw new NotFoundError('Payment not found.');
      const amount = parseRefundAmount(request.body.amount);
      return createRefund(
        ctx,
        { organizationId: principal.organizationId, environment },
        {
          transactionId: request.params.id,
          amount,
          reason: parseReason(request.body.reason),
          source: 'api',
          actor: actorOf(request),
        },
        // The refund and the Idempotency-Key's answer commit together: a retry never refunds twice.
        {
          afterRecord: (trx, refund, payment) =>
            recordIdempotentResponseIn(trx, request, 200, presentCreatedRefund(refund, payment.public_id)),
        },
      );
    },
  );

  app.get(
    '/refunds/',
    {
      preValidation: requireKey(READ),
      schema: {
        operationId: 'listRefunds',
        summary: 'List refunds',
        querystring: RefundListQuery,
        ...RefundListDocumented,
        response: { 200: RefundPage },
      },
    },
    async (request) => {
      const principal = request.principal;
      if (principal?.kind !== 'api_key') throw new NotFoundError();
      return listRefunds(ctx.db, { organizationId: principal.organizationId, environment }, request);
    },
  );

  app.get(
    '/refunds/:id/',
    {
      preValidation: requireKey(READ),
      schema: {
        operationId: 'getRefund',
        summary: 'Get a refund',
        params: RefundIdParam,
        response: {
          200: Refund,
          404: ErrorResponse('No refund of this organization and environment has this id.'),
        },
      },
    },
    async (request) => {
      const principal = request.principal;
      if (principal?.kind !== 'api_key') throw new NotFoundError('Refund not found.');
      const refund = await store.findRefund(
        ctx.db,
        { organizationId: principal.organizationId, environment },
        request.params.id,
      );
      if (!refund) throw new NotFoundError('Refund not found.');
      return presentRefund(refund);
    },
  );

  // Under /api this path's POST belongs to the dashboard route below; the sandbox has no dashboard.
  if (environment === 'sandbox') {
    app.post('/refunds/', async (request) => {
      throw new MethodNotAllowedError(request.method, ['GET']);
    });
  }
}

export async function refundSessionRoutes(app: App, { ctx }: RouteOptions) {
  const requireSession = sessionAuth(ctx);

  // The dashboard's refund list: the same filters and page shape as GET /refunds/ (an API-key endpoint),
  // with ?environment=production|sandbox (default production).
  app.get(
    '/organization/refunds/',
    {
      preValidation: requireSession,
      schema: {
        querystring: DashboardRefundListQuery,
        ...DashboardRefundListDocumented,
        response: { 200: RefundPage },
      },
    },
    async (request) => {
      const environment =
        choiceParam(queryOf(request), 'environment', ['production', 'sandbox'] as const) ?? 'production';
      return listRefunds(ctx.db, { organizationId: sessionOf(request).organizationId, environment }, request);
    },
  );

  // Each code is a mail to the user: a stolen or scripted session must not turn Kassa into a mail cannon.
  const codeLimiter = new FixedWindowLimiter(
    ctx.config.rateLimits.verificationCodes,
    ctx.config.rateLimits.verificationCodeWindowMs,
    ctx.clock,
  );
  app.post(
    '/refunds/verification-code/',
    { preValidation: requireSession, schema: { response: { 202: VerificationCodeSent } } },
    async (request, reply) => {
      const principal = sessionOf(request);
      applyRateLimit(
        reply,
        codeLimiter.hit(String(principal.userId)),
        'Too many verification codes requested. Use the last one sent, or wait before asking again.',
      );
      return reply.code(202).send(await issueVerificationCode(ctx, principal, actorOf(request)));
    },
  );

  app.post(
    '/refunds/',
    {
      onRequest: refuseApiKeys,
      preValidation: requireSession,
      schema: {
        body: DashboardRefundBody,
        ...RefundBodyDocumented,
        response: {
          200: RefundCreated,
          404: ErrorResponse('No payment of this organization has this transaction_id.'),
          405: ErrorResponse(
            'The request carries an API key: this route is for the dashboard only (refund with POST /transactions/{id}/refund/).',
          ),
        },
      },
    },
    async (request) => {
      const principal = sessionOf(request);
      const reason = parseReason(request.body.reason);
      const amount = parseRefundAmount(request.body.amount);
      const codeId = await checkVerificationCode(ctx, principal, request.body.verification_code);
      return createRefund(
        ctx,
        { organizationId: principal.organizationId, environment: null },
        {
          transactionId: String(request.body.transaction_id),
          amount,
          reason,
          source: 'dashboard',
          actor: actorOf(request),
        },
        { beforeRecord: (trx) => consumeVerificationCode(trx, codeId, ctx.clock().toISOString()) },
      );
    },
  );
}
