// Request and response schemas of the webhook endpoints: validation, types and the OpenAPI document
// from one source.
import { Type } from 'typebox';
import { ErrorResponse, limitedPerAddress, Nullable, Page, Shape, Timestamp } from '../../http/schemas.ts';

const tags = ['Webhooks'];

// Response schemas (documentation; the e2e suite checks every answer against them).

const endpointFields = {
  endpoint_url: Nullable(
    Type.String({
      description:
        'null until an endpoint is set. A URL stored with credentials before they were refused is shown with its password masked.',
    }),
  ),
  secret_preview: Nullable(Type.String({ description: 'whsec_… and the last 4 characters.' })),
  created_at: Nullable(Timestamp),
  updated_at: Nullable(Timestamp),
  previous_secret_expires_at: Nullable(
    Type.String({
      format: 'date-time',
      description:
        'Until then the secret the last rotation replaced also signs webhook-signature (previous_secret_expires_in); null when it does not.',
    }),
  ),
  endpoint_problem: Nullable(
    Type.String({
      description:
        'Why nothing can be delivered to endpoint_url until it is set again (a URL stored with credentials); null when deliveries are sent.',
    }),
  ),
};

export const WebhookEndpoint = Shape(endpointFields, 'The webhook endpoint and a preview of its secret.');

/** PUT (raw_secret the first time, when the secret is created) and rotate (always). */
export const WebhookEndpointWithSecret = Shape(
  { ...endpointFields, raw_secret: Type.Optional(Type.String({ description: 'The secret, shown once.' })) },
  'The webhook endpoint; raw_secret is present only when a secret was just created.',
);

const EventName = Type.Unsafe<string>(
  Type.Enum(['transaction.status_changed', 'refund.status_changed', 'payout.status_changed', 'webhook.test']),
);
const DeliveryStatus = Type.Enum(['pending', 'delivered', 'failed']);

const queuedFields = {
  delivery_id: Type.String({ format: 'uuid', description: 'Sent as X-Webhook-Delivery-Id.' }),
  event: EventName,
  status: DeliveryStatus,
};

export const QueuedDelivery = Shape(queuedFields, 'The event was written and its delivery queued.');
export const QueuedTransactionDelivery = Shape(
  { ...queuedFields, transaction_id: Type.String() },
  'transaction.status_changed was written again and its delivery queued.',
);

const deliveryFields = {
  id: Type.String({ format: 'uuid', description: 'The delivery id (X-Webhook-Delivery-Id).' }),
  event: EventName,
  event_id: Type.Integer(),
  subject: Nullable(Type.String()),
  livemode: Type.Boolean(),
  status: DeliveryStatus,
  attempt_count: Type.Integer({ minimum: 0 }),
  next_attempt_at: Nullable(Timestamp),
  last_response_status: Nullable(Type.Integer()),
  last_error: Nullable(Type.String()),
  redelivery_of: Nullable(Type.String({ description: 'The delivery id this one redelivers.' })),
  created_at: Timestamp,
  updated_at: Timestamp,
  delivered_at: Nullable(Timestamp),
};

const DeliveryAttempt = Shape({
  attempt: Type.Integer({ minimum: 1 }),
  attempted_at: Timestamp,
  url: Type.String(),
  response_status: Nullable(Type.Integer()),
  duration_ms: Type.Integer({ minimum: 0 }),
  error: Nullable(Type.String()),
  response_body: Nullable(Type.String({ description: 'The first kilobyte of a non-2xx answer.' })),
});

export const DeliveryPage = Page(Shape(deliveryFields), 'Deliveries, newest first.');

export const DeliveryDetail = Shape(
  {
    ...deliveryFields,
    payload: Type.Unsafe<unknown>(
      Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'The body as sent.' })),
    ),
    attempts: Type.Array(DeliveryAttempt),
  },
  'A delivery with its payload and attempts.',
);

export const Redelivery = Shape(
  { ...deliveryFields, attempts: Type.Array(DeliveryAttempt, { maxItems: 0 }) },
  'The new delivery, sent at once.',
);

export const ReceivedPage = Page(
  Shape({
    id: Type.Integer(),
    received_at: Timestamp,
    event: Nullable(Type.String()),
    delivery_id: Nullable(Type.String()),
    content_type: Nullable(Type.String()),
    headers: Type.Record(Type.String(), Type.String()),
    body: Type.String(),
    body_encoding: Type.Enum(['utf8', 'base64']),
    signature_valid: Nullable(Type.Boolean({ description: 'null: no signature, or no secret configured.' })),
  }),
  'Requests the test receiver kept, newest first.',
);

export const Received = Shape({ received: Type.Unsafe<boolean>(Type.Literal(true)) });

// Route schemas.

export const PutEndpointSchema = {
  tags,
  summary: 'Set the webhook endpoint URL (the signing secret is created with the first URL)',
  body: Type.Object({ endpoint_url: Type.String({ minLength: 1, maxLength: 2048 }) }),
  response: { 200: WebhookEndpointWithSecret },
};

/** The longest overlap a rotation may ask for: 7 days, in seconds. */
export const MAX_PREVIOUS_SECRET_SECONDS = 7 * 24 * 60 * 60;

export const RotateSecretSchema = {
  tags,
  summary: 'New signing secret, returned once',
  body: Type.Optional(
    Type.Object({
      previous_secret_expires_in: Type.Optional(
        Type.Integer({
          minimum: 0,
          maximum: MAX_PREVIOUS_SECRET_SECONDS,
          description:
            'Seconds (0 to 604800, 7 days) during which the replaced secret also signs the Standard Webhooks ' +
            'webhook-signature header, beside the new one. 0, the default: only the new secret signs from now on. ' +
            "X-Webhook-Signature always carries the new secret's signature alone.",
        }),
      ),
    }),
  ),
  response: { 200: WebhookEndpointWithSecret },
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
  response: {
    202: QueuedTransactionDelivery,
    404: ErrorResponse(
      'No payment of this organization has this transaction_id, or (none named) the organization has no payment yet.',
    ),
  },
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
    environment: Type.Optional(
      Type.String({ maxLength: 32, description: 'production or sandbox; both when absent.' }),
    ),
    status: Type.Optional(Type.String({ maxLength: 32 })),
    event: Type.Optional(Type.String({ maxLength: 64 })),
    subject: Type.Optional(Type.String({ maxLength: 64 })),
  }),
  response: { 200: DeliveryPage },
};

const DeliveryParams = Type.Object({ id: Type.String({ maxLength: 64 }) });

export const DeliveryParamsSchema = {
  tags,
  params: DeliveryParams,
  response: { 200: DeliveryDetail, 404: ErrorResponse('No delivery of this organization has this id.') },
};

export const RedeliverSchema = {
  tags,
  summary: 'Send the event again as a new delivery (new delivery id)',
  params: DeliveryParams,
  response: {
    201: Redelivery,
    404: ErrorResponse('No delivery of this organization has this id.'),
    409: ErrorResponse(
      'The event of this delivery no longer exists (its detail shows `payload: null`), so it cannot be redelivered.',
    ),
  },
};

export const ListReceivedSchema = {
  tags,
  summary: 'Requests the public test receiver kept (the last 100)',
  querystring: Type.Object(PageQuery),
  response: { 200: ReceivedPage },
};

export const ReceiverSchema = {
  ...limitedPerAddress,
  tags,
  summary: 'Public test receiver: accepts any POST up to 256 KiB and keeps it for the dashboard',
  params: Type.Object({ slug: Type.String({ maxLength: 100 }) }),
  response: { 200: Received, 404: ErrorResponse('No organization has this slug.') },
};

export const webhookTags = tags;
