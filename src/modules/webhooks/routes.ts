// Session endpoints under /api/organization/webhook/, and the public test receiver
// POST /api/v1/webhooks/{slug}/.
import type { FastifyRequest } from 'fastify';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { clientNetwork } from '../../http/client-network.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { actorOf } from '../audit/record.ts';
import { getDelivery, listDeliveries, redeliver } from './deliveries.ts';
import { listReceived, RECEIVER_BODY_LIMIT, receive } from './receiver.ts';
import {
  DeliveryParamsSchema,
  ListDeliveriesSchema,
  ListReceivedSchema,
  PutEndpointSchema,
  QueuedDelivery,
  ReceiverSchema,
  RedeliverSchema,
  RotateSecretSchema,
  TestTransactionSchema,
  webhookTags as tags,
  WebhookEndpoint,
} from './schemas.ts';
import { getEndpoint, putEndpoint, resendTransaction, rotateSecret, sendTestEvent } from './service.ts';

const BASE = '/organization/webhook';

async function dashboardRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));
  const org = (request: FastifyRequest) => sessionOf(request).organizationId;

  app.get(
    `${BASE}/`,
    {
      schema: {
        tags,
        summary: 'The webhook endpoint and a preview of its secret',
        response: { 200: WebhookEndpoint },
      },
    },
    async (request) => getEndpoint(ctx, org(request)),
  );
  app.put(`${BASE}/`, { schema: PutEndpointSchema }, async (request) =>
    putEndpoint(ctx, org(request), request.body.endpoint_url, actorOf(request)),
  );
  app.post(
    `${BASE}/rotate/`,
    {
      schema: RotateSecretSchema,
      // The body is optional: a bare POST rotates with no overlap, as the interface has it.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) =>
      rotateSecret(ctx, org(request), actorOf(request), request.body?.previous_secret_expires_in ?? 0),
  );
  app.post(
    `${BASE}/test/`,
    { schema: { tags, summary: 'Send a webhook.test event', response: { 202: QueuedDelivery } } },
    async (request, reply) => reply.code(202).send(await sendTestEvent(ctx, org(request), actorOf(request))),
  );
  app.post(
    `${BASE}/test-transaction/`,
    {
      schema: TestTransactionSchema,
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const reference = request.body.transaction_id;
      const sent = await resendTransaction(
        ctx,
        org(request),
        reference === undefined ? undefined : String(reference),
        actorOf(request),
      );
      return reply.code(202).send(sent);
    },
  );

  app.get(`${BASE}/deliveries/`, { schema: ListDeliveriesSchema }, async (request) =>
    listDeliveries(ctx, org(request), request),
  );
  app.get(`${BASE}/deliveries/:id/`, { schema: DeliveryParamsSchema }, async (request) =>
    getDelivery(ctx, org(request), request.params.id),
  );
  app.post(`${BASE}/deliveries/:id/redeliver/`, { schema: RedeliverSchema }, async (request, reply) =>
    reply.code(201).send(await redeliver(ctx, org(request), request.params.id, actorOf(request))),
  );
  app.get(`${BASE}/received/`, { schema: ListReceivedSchema }, async (request) =>
    listReceived(ctx, org(request), request),
  );
}

async function receiverRoutes(app: App, { ctx }: RouteOptions) {
  const limits = ctx.config.rateLimits;
  const limiter = new FixedWindowLimiter(limits.publicPerWindow, limits.publicWindowMs, ctx.clock);
  app.addHook('onRequest', async (request, reply) => {
    applyRateLimit(reply, limiter.hit(clientNetwork(request.ip)), 'Too many requests. Try again later.');
  });
  // Any content type, kept as the exact bytes received.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: RECEIVER_BODY_LIMIT },
    (_request, body, done) => done(null, body),
  );
  app.post(
    '/v1/webhooks/:slug/',
    { schema: ReceiverSchema, bodyLimit: RECEIVER_BODY_LIMIT },
    async (request) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      return receive(ctx, request.params.slug, request.headers, body);
    },
  );
}

export async function webhookRoutes(app: App, options: RouteOptions) {
  await app.register(dashboardRoutes, options);
  await app.register(receiverRoutes, options);
}
