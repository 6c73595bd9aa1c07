// The fake Stripe's objects, typed with the stripe package's own types: every required field is written
// out, so a change of Stripe's shapes in a new SDK version fails `tsc` here instead of passing silently.
import { randomBytes } from 'node:crypto';
import type Stripe from 'stripe';
import type { TestCard } from './cards.ts';

/** The payment methods the fake account has enabled: what an intent without an allowed list offers. */
export const ACCOUNT_PAYMENT_METHOD_TYPES = ['card', 'link'] as const;

/** Stripe's clock, in milliseconds: real time unless a test runs it with Kassa's own (FakeStripe.useClock). */
let clockMs: () => number = () => Date.now();
export const now = () => Math.floor(clockMs() / 1000);
/** Runs Stripe's clock with `clock` until the returned function restores real time. */
export function useClock(clock: () => number): () => void {
  clockMs = clock;
  return () => {
    clockMs = () => Date.now();
  };
}

export function stripeId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x')}`;
}

export function paymentIntent(fields: {
  amount: number;
  currency: string;
  metadata: Stripe.Metadata;
  customer: string | null;
  setupFutureUsage: Stripe.PaymentIntent.SetupFutureUsage | null;
  /** allowed_payment_method_types as created, or null: the account's enabled methods (automatic). */
  allowedTypes: string[] | null;
}): Stripe.PaymentIntent {
  const id = stripeId('pi');
  return {
    id,
    object: 'payment_intent',
    allowed_payment_method_types: fields.allowedTypes,
    amount: fields.amount,
    amount_capturable: 0,
    amount_received: 0,
    application: null,
    application_fee_amount: null,
    automatic_payment_methods: fields.allowedTypes ? null : { enabled: true },
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic',
    client_secret: `${id}_secret_${randomBytes(12).toString('base64url')}`,
    confirmation_method: 'automatic',
    created: now(),
    currency: fields.currency,
    customer: fields.customer,
    customer_account: null,
    description: null,
    excluded_payment_method_types: null,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    managed_payments: null,
    metadata: fields.metadata,
    next_action: null,
    on_behalf_of: null,
    payment_method: null,
    payment_method_configuration_details: null,
    payment_method_options: null,
    payment_method_types: fields.allowedTypes ?? [...ACCOUNT_PAYMENT_METHOD_TYPES],
    payment_record: null,
    processing: null,
    receipt_email: null,
    review: null,
    setup_future_usage: fields.setupFutureUsage,
    shipping: null,
    source: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: 'requires_payment_method',
    transfer_group: null,
  };
}

export function charge(fields: {
  intent: Stripe.PaymentIntent;
  method: Stripe.PaymentMethod;
  card: TestCard;
  status: 'succeeded' | 'failed' | 'pending';
  failure: { code: string; message: string } | null;
  authenticated: boolean;
}): Stripe.Charge {
  const { intent, method, card } = fields;
  const succeeded = fields.status === 'succeeded';
  return {
    id: stripeId('ch'),
    object: 'charge',
    amount: intent.amount,
    amount_captured: succeeded ? intent.amount : 0,
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: succeeded ? stripeId('txn') : null,
    billing_details: { address: null, email: null, name: null, phone: null, tax_id: null },
    calculated_statement_descriptor: 'KASSA',
    captured: succeeded,
    created: now(),
    currency: intent.currency,
    customer: typeof intent.customer === 'string' ? intent.customer : null,
    description: null,
    disputed: false,
    failure_balance_transaction: null,
    failure_code: fields.failure?.code ?? null,
    failure_message: fields.failure?.message ?? null,
    fraud_details: {},
    livemode: false,
    metadata: {},
    on_behalf_of: null,
    outcome: {
      advice_code: null,
      network_advice_code: null,
      network_decline_code: null,
      network_status: fields.failure ? 'declined_by_network' : 'approved_by_network',
      reason: fields.failure?.code ?? null,
      seller_message: fields.failure ? 'The bank declined the payment.' : 'Payment complete.',
      type: fields.failure ? 'issuer_declined' : 'authorized',
    },
    paid: succeeded,
    payment_intent: intent.id,
    payment_method: method.id,
    payment_method_details:
      card.type === 'link' ? { type: 'link', link: { country: 'US' } } : cardDetails(fields),
    receipt_email: null,
    receipt_number: null,
    receipt_url: null,
    refunded: false,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: fields.status,
    transfer_data: null,
    transfer_group: null,
  };
}

/** A card charge's payment_method_details. */
function cardDetails(fields: {
  intent: Stripe.PaymentIntent;
  card: TestCard;
  status: 'succeeded' | 'failed' | 'pending';
  authenticated: boolean;
}): Stripe.Charge.PaymentMethodDetails {
  const { intent, card } = fields;
  const succeeded = fields.status === 'succeeded';
  return {
    type: 'card',
    card: {
      amount_authorized: succeeded ? intent.amount : null,
      authorization_code: succeeded ? '123456' : null,
      brand: card.brand,
      checks: null,
      country: 'US',
      electronic_commerce_indicator: null,
      exp_month: card.expMonth,
      exp_year: card.expYear,
      funding: 'credit',
      installments: null,
      mandate: null,
      network: card.brand,
      network_transaction_id: null,
      regulated_status: 'unregulated',
      three_d_secure: fields.authenticated
        ? {
            authentication_flow: 'challenge',
            electronic_commerce_indicator: '05',
            exemption_indicator: null,
            result: 'authenticated',
            result_reason: null,
            transaction_id: stripeId('3ds'),
            version: '2.2.0',
          }
        : null,
      transaction_link_id: null,
      wallet: null,
      last4: card.last4,
    },
  };
}

export function paymentMethod(card: TestCard, customer: string | null): Stripe.PaymentMethod {
  const common = {
    id: stripeId('pm'),
    object: 'payment_method' as const,
    billing_details: { address: null, email: null, name: null, phone: null, tax_id: null },
    created: now(),
    customer,
    customer_account: null,
    livemode: false,
    metadata: {},
  };
  if (card.type === 'link') return { ...common, type: 'link', link: { email: 'customer@example.com' } };
  return {
    ...common,
    card: {
      brand: card.brand,
      checks: null,
      country: 'US',
      display_brand: card.brand,
      exp_month: card.expMonth,
      exp_year: card.expYear,
      funding: 'credit',
      generated_from: null,
      networks: null,
      regulated_status: 'unregulated',
      three_d_secure_usage: { supported: true },
      wallet: null,
      last4: card.last4,
    },
    type: 'card',
  };
}

export function refund(fields: {
  intent: Stripe.PaymentIntent;
  chargeId: string;
  amount: number;
  reason: Stripe.Refund.Reason | null;
  metadata: Stripe.Metadata;
  status: string;
}): Stripe.Refund {
  return {
    id: stripeId('re'),
    object: 'refund',
    amount: fields.amount,
    balance_transaction: null,
    charge: fields.chargeId,
    created: now(),
    currency: fields.intent.currency,
    customer: null,
    customer_account: null,
    metadata: fields.metadata,
    payment_intent: fields.intent.id,
    payment_method: null,
    reason: fields.reason,
    receipt_number: null,
    source_transfer_reversal: null,
    status: fields.status,
    transfer_reversal: null,
  };
}

export function customer(fields: {
  email: string | null;
  name: string | null;
  metadata: Stripe.Metadata;
}): Stripe.Customer {
  return {
    id: stripeId('cus'),
    object: 'customer',
    balance: 0,
    created: now(),
    default_source: null,
    description: null,
    email: fields.email,
    invoice_settings: {
      custom_fields: null,
      default_payment_method: null,
      footer: null,
      rendering_options: null,
    },
    livemode: false,
    metadata: fields.metadata,
    name: fields.name,
    shipping: null,
  };
}

export function setupIntent(fields: {
  customer: string;
  metadata: Stripe.Metadata;
  usage: string;
  allowedTypes: string[] | null;
}): Stripe.SetupIntent {
  const id = stripeId('seti');
  return {
    id,
    object: 'setup_intent',
    allowed_payment_method_types: fields.allowedTypes,
    application: null,
    automatic_payment_methods: fields.allowedTypes ? null : { enabled: true },
    cancellation_reason: null,
    client_secret: `${id}_secret_${randomBytes(12).toString('base64url')}`,
    created: now(),
    customer: fields.customer,
    description: null,
    excluded_payment_method_types: null,
    last_setup_error: null,
    latest_attempt: null,
    livemode: false,
    mandate: null,
    metadata: fields.metadata,
    next_action: null,
    on_behalf_of: null,
    payment_method: null,
    payment_method_configuration_details: null,
    payment_method_options: null,
    payment_method_types: fields.allowedTypes ?? [...ACCOUNT_PAYMENT_METHOD_TYPES],
    single_use_mandate: null,
    status: 'requires_payment_method',
    usage: fields.usage,
  };
}

/** The object kinds the fake's events carry, by the event types it sends. */
type FakeEvent =
  | Stripe.PaymentIntentSucceededEvent
  | Stripe.PaymentIntentPaymentFailedEvent
  | Stripe.PaymentIntentProcessingEvent
  | Stripe.PaymentIntentRequiresActionEvent
  | Stripe.PaymentIntentCanceledEvent
  | Stripe.PaymentIntentCreatedEvent
  | Stripe.ChargeRefundedEvent
  | Stripe.ChargeSucceededEvent
  | Stripe.ChargeFailedEvent
  | Stripe.ChargeRefundUpdatedEvent
  | Stripe.RefundCreatedEvent
  | Stripe.RefundUpdatedEvent
  | Stripe.RefundFailedEvent
  | Stripe.SetupIntentSucceededEvent
  | Stripe.SetupIntentSetupFailedEvent
  | Stripe.SetupIntentRequiresActionEvent;

/** An event: the envelope typed as Stripe's EventBase; its object a snapshot of the object as it is now. */
export function event<T extends FakeEvent>(
  type: T['type'],
  object: T['data']['object'],
  apiVersion: string,
): T {
  const envelope: Omit<Stripe.EventBase, 'type' | 'data'> = {
    id: stripeId('evt'),
    object: 'event',
    api_version: apiVersion,
    created: now(),
    livemode: false,
    pending_webhooks: 1,
    request: { id: null, idempotency_key: null },
  };
  return { ...envelope, type, data: { object: structuredClone(object) } } as T;
}
