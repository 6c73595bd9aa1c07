// Payment-link endpoints under /api: the dashboard's /payment-links/ (session only; API keys get 401)
// and the public /payment-links/public/{token}/ preview and start (no auth, rate limited per IP).

import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { PUBLIC_BODY_LIMIT } from '../../http/public.ts';
import { ErrorResponse, limitedPerAddress, NoContent } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { actorOf } from '../audit/record.ts';
import { limitPublicCaller } from '../checkout/rate-limit.ts';
import { CheckoutCreated } from '../checkout/schemas.ts';
import { EnvironmentQuery } from '../organizations/schemas.ts';
import { DashboardPayment } from '../payments/schemas.ts';
import { listLinkPayments } from './payments.ts';
import { previewLink, startLink } from './public-service.ts';
import {
  CreateLinkBody,
  LinkIdParam,
  LinkPreview,
  LinkTokenParam,
  PaymentLink,
  PaymentLinkList,
  StartLinkBody,
  UpdateLinkBody,
} from './schemas.ts';
import { createLink, deleteLink, getLink, listLinks, updateLink } from './service.ts';

async function dashboardRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get(
    '/payment-links/',
    { schema: { querystring: EnvironmentQuery, response: { 200: PaymentLinkList } } },
    async (request) =>
      listLinks(ctx, sessionOf(request).organizationId, request.query.environment ?? 'production'),
  );

  app.post(
    '/payment-links/',
    {
      schema: {
        body: CreateLinkBody,
        response: { 201: PaymentLink },
        description: 'Create a link; its products and prices are a snapshot.',
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await createLink(ctx, sessionOf(request).organizationId, request.body, actorOf(request))),
  );

  app.get(
    '/payment-links/:id/',
    { schema: { params: LinkIdParam, response: { 200: PaymentLink }, description: 'Detail and stats.' } },
    async (request) => getLink(ctx, sessionOf(request).organizationId, request.params.id),
  );

  app.patch(
    '/payment-links/:id/',
    {
      schema: {
        params: LinkIdParam,
        body: UpdateLinkBody,
        response: { 200: PaymentLink, 409: ErrorResponse('The payment link has been deleted.') },
        description: 'Update name, is_active, expires_at, max_uses, metadata; other fields are a 400.',
      },
    },
    async (request) =>
      updateLink(ctx, sessionOf(request).organizationId, request.params.id, request.body, actorOf(request)),
  );

  app.delete(
    '/payment-links/:id/',
    {
      schema: {
        params: LinkIdParam,
        response: { 204: NoContent },
        description: 'Soft delete: status deleted, public access 410.',
      },
    },
    async (request, reply) => {
      await deleteLink(ctx, sessionOf(request).organizationId, request.params.id, actorOf(request));
      return reply.code(204).send();
    },
  );

  app.get(
    '/payment-links/:id/payments/',
    {
      schema: {
        params: LinkIdParam,
        response: { 200: Type.Array(DashboardPayment) },
        description: 'Payments started from the link, newest first.',
      },
    },
    async (request) => listLinkPayments(ctx, sessionOf(request).organizationId, request.params.id),
  );
}

const LINK_NOT_FOUND = ErrorResponse('No payment link has this token (an unknown or malformed uuid).');
const LINK_GONE = ErrorResponse('The link is inactive, expired, at its max uses, or deleted.');

async function publicRoutes(app: App, { ctx }: RouteOptions) {
  // One per-IP window for every public endpoint: the link page, then the hosted checkout it leads to.
  app.addHook('onRequest', async (request, reply) => limitPublicCaller(ctx, request, reply));

  app.get(
    '/payment-links/public/:token/',
    {
      schema: {
        ...limitedPerAddress,
        params: LinkTokenParam,
        response: { 200: LinkPreview, 404: LINK_NOT_FOUND, 410: LINK_GONE },
        description: 'Preview for the payment page; counts a view. 410 when unavailable.',
      },
    },
    async (request) => previewLink(ctx, request.params.token),
  );

  app.post(
    '/payment-links/public/:token/start/',
    {
      bodyLimit: PUBLIC_BODY_LIMIT,
      schema: {
        ...limitedPerAddress,
        params: LinkTokenParam,
        body: StartLinkBody,
        response: { 201: CheckoutCreated, 404: LINK_NOT_FOUND, 410: LINK_GONE },
        description:
          'Create a hosted checkout session from the link snapshot, consuming one use. 410 when unavailable.',
      },
    },
    async (request, reply) => reply.code(201).send(await startLink(ctx, request.params.token, request.body)),
  );
}

export async function paymentLinkRoutes(app: App, options: RouteOptions) {
  await app.register(dashboardRoutes, options);
  await app.register(publicRoutes, options);
}
