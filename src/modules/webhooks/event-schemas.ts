// The bodies Kassa POSTs to a merchant's webhook endpoint (docs/webhooks.md), for the OpenAPI document's
// `webhooks` section. Built by payments/events.ts, refunds and payouts; the webhook tests check the bytes.
import { Type } from 'typebox';
import { Currency, Money, Named, Nullable, Shape, Timestamp } from '../../http/schemas.ts';
import { DepositAttempt, PaymentStatus, paymentReferenceFields } from '../payments/schemas.ts';

const livemode = Type.Boolean({ description: 'true for production data, false for sandbox data.' });

export const TransactionStatusChanged = Named(
  'TransactionStatusChangedEvent',
  Shape(
    {
      event: Type.Literal('transaction.status_changed'),
      transaction_id: Nullable(
        Type.String({ description: 'null for a checkout canceled before any attempt.' }),
      ),
      order_id: Type.String(),
      amount: Money,
      gross_amount: Money,
      fee_percent: Type.Number(),
      status: PaymentStatus,
      currency: Currency,
      depositAttempts: Type.Array(DepositAttempt, { description: 'The whole history, newest first.' }),
      simulated: Type.Optional(
        Type.Boolean({
          description:
            "As on the Payment: true when the built-in simulator processed it. Absent from a checkout's cancellation before any attempt (no payment).",
        }),
      ),
      created_at: Timestamp,
      updated_at: Timestamp,
      ...paymentReferenceFields,
      livemode,
    },
    'A payment changed status or card attempts.',
  ),
);

export const RefundStatusChanged = Named(
  'RefundStatusChangedEvent',
  Shape(
    {
      event: Type.Literal('refund.status_changed'),
      refund_id: Type.String(),
      transaction_id: Type.String(),
      amount: Money,
      currency: Currency,
      amount_usd: Money,
      amount_in_cents: Type.Integer(),
      status: Type.Enum(['pending', 'processing', 'completed', 'failed', 'rejected']),
      reason: Nullable(Type.String()),
      created_at: Timestamp,
      updated_at: Timestamp,
      livemode,
    },
    'A refund changed status.',
  ),
);

export const PayoutStatusChanged = Named(
  'PayoutStatusChangedEvent',
  Shape(
    {
      event: Type.Literal('payout.status_changed'),
      payout_id: Type.String(),
      amount: Money,
      status: Type.String(),
      currency: Currency,
      created_at: Timestamp,
      updated_at: Timestamp,
      livemode,
    },
    'A payout changed status.',
  ),
);

export const WebhookTest = Named(
  'WebhookTestEvent',
  Shape(
    { event: Type.Literal('webhook.test'), message: Type.String(), livemode },
    'Sent from the dashboard.',
  ),
);

export const WEBHOOK_EVENTS = {
  'transaction.status_changed': TransactionStatusChanged,
  'refund.status_changed': RefundStatusChanged,
  'payout.status_changed': PayoutStatusChanged,
  'webhook.test': WebhookTest,
};

/** The headers of every delivery attempt (docs/webhooks.md#headers). */
export const WEBHOOK_HEADERS: Record<string, string> = {
  'X-Webhook-Event': 'The `event` of the body.',
  'X-Webhook-Delivery-Id': 'A UUID, the same for every automatic retry of one delivery.',
  'X-Webhook-Timestamp': 'Unix time in seconds of this attempt.',
  'X-Webhook-Signature': '`sha256=` + hex HMAC-SHA256 of the raw body, keyed with the secret string.',
  'webhook-id': 'Standard Webhooks: the same UUID as X-Webhook-Delivery-Id.',
  'webhook-timestamp': 'Standard Webhooks: the same Unix time as X-Webhook-Timestamp.',
  'webhook-signature':
    'Standard Webhooks: `v1,` + base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{raw body}".',
};
