// Stripe's webhooks: the Stripe-Signature header verified over the raw body with the SDK (t=, one or more
// v1= HMAC-SHA256 values, 300 s tolerance), then the event read for the ids of what changed. Its data is
// never applied as state: Kassa re-fetches each object first, so a replayed or out-of-order event can
// only cause a harmless re-read.
import type Stripe from 'stripe';
import { type ProviderNotice, WebhookRejectedError } from '../types.ts';
import { idOf } from './transport.ts';

export const STRIPE_SIGNATURE_TOLERANCE_S = 300;

/** The events Kassa acts on; others are acknowledged and ignored. (Also what `kassa doctor` expects enabled.) */
export const HANDLED_EVENTS = [
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.processing',
  'payment_intent.requires_action',
  'payment_intent.canceled',
  'setup_intent.succeeded',
  'setup_intent.setup_failed',
  'charge.refunded',
  'charge.refund.updated',
  'refund.updated',
  'refund.failed',
] as const;

function header(headers: Record<string, string | string[] | undefined>): string {
  const value = headers['stripe-signature'];
  return Array.isArray(value) ? value.join(',') : (value ?? '');
}

/** The ids an event names: the PaymentIntent, refund or SetupIntent to re-read. */
export function noticeOf(event: Stripe.Event): ProviderNotice {
  const notice: ProviderNotice = {
    paymentIds: [],
    refundIds: [],
    setupIds: [],
    eventId: event.id,
    eventType: event.type,
  };
  const object = event.data.object as { object?: string; id?: string; payment_intent?: unknown };
  if (!(HANDLED_EVENTS as readonly string[]).includes(event.type)) return notice;
  switch (object.object) {
    case 'payment_intent':
      if (object.id) notice.paymentIds.push(object.id);
      break;
    case 'setup_intent':
      if (object.id) notice.setupIds?.push(object.id);
      break;
    case 'charge':
    case 'refund': {
      const intent = idOf(object.payment_intent as string | { id: string } | null);
      if (intent) notice.paymentIds.push(intent);
      if (object.object === 'refund' && object.id) notice.refundIds.push(object.id);
      break;
    }
  }
  return notice;
}

export function parseStripeWebhook(
  stripe: Stripe,
  secret: string | null,
  rawBody: string,
  headers: Record<string, string | string[] | undefined>,
): ProviderNotice {
  if (!secret) {
    throw new WebhookRejectedError('Stripe webhooks are not configured: set KASSA_STRIPE_WEBHOOK_SECRET.');
  }
  const signature = header(headers);
  if (!signature) throw new WebhookRejectedError('Stripe-Signature: the header is missing.');
  let event: Stripe.Event;
  try {
    event = stripe.webhooks.constructEvent(rawBody, signature, secret, STRIPE_SIGNATURE_TOLERANCE_S);
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    throw new WebhookRejectedError(`Stripe-Signature: ${reason}`);
  }
  return noticeOf(event);
}
