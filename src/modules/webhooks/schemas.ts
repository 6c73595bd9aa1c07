// Request schemas of the webhook endpoints: validation, types and the OpenAPI document from one source.
import { Type } from 'typebox';

const tags = ['Webhooks'];

export const PutEndpointSchema = {
  tags,
  summary: 'Set the webhook endpoint URL (the signing secret is created with the first URL)',
  body: Type.Object({ endpoint_url: Type.String({ minLength: 1, maxLength: 2048 }) }),
};

export const TestTransactionSchema = {
  tags,
  summary: 'Resend transaction.status_changed for a payment (the latest when none is named)',
  body: Type.Optional(
    Type.Object({
      transaction_id: Type.Optional(
        Type.Union([Type.String({ minLength: 1, maxLength: 64 }), Type.Integer()]),
      ),
    }),
  ),
};

const PageQuery = {
  page: Type.Optional(Type.String({ maxLength: 10 })),
  page_size: Type.Optional(Type.String({ maxLength: 10 })),
};

export const ListDeliveriesSchema = {
  tags,
  summary: 'The delivery log, newest first',
  querystring: Type.Object({
    ...PageQuery,
    status: Type.Optional(Type.String({ maxLength: 32 })),
    event: Type.Optional(Type.String({ maxLength: 64 })),
    subject: Type.Optional(Type.String({ maxLength: 64 })),
  }),
};

export const DeliveryParamsSchema = {
  tags,
  params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
};

export const ListReceivedSchema = {
  tags,
  summary: 'Requests the public test receiver kept (the last 100)',
  querystring: Type.Object(PageQuery),
};

export const ReceiverSchema = {
  tags,
  summary: 'Public test receiver: accepts any POST up to 256 KiB and keeps it for the dashboard',
  params: Type.Object({ slug: Type.String({ maxLength: 100 }) }),
};

export const webhookTags = tags;
