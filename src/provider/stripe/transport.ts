// Stripe's side of the wire: the official SDK pointed at KASSA_STRIPE_API_URL (any URL other than
// Stripe's own is passed as protocol/host/port, which is how the tests reach their fake Stripe), with
// the SDK's own retries under the same idempotency key. And what a Stripe error means for a write:
// a card error is a decline; a request Stripe refused made nothing; anything without an answer, or an
// idempotency conflict, is unknown (the reconciler reads it back).
import type Stripe from 'stripe';
import type { StripeConfig } from '../../config.ts';
import { isRetryableDecline, type ProviderOutcome } from '../types.ts';

/**
 * The SDK is loaded on first use (about 0.6 s and 30 MB), so a service on the simulator never pays for it.
 */
export async function createStripeClient(config: StripeConfig, timeoutMs: number): Promise<Stripe> {
  const { default: StripeSdk } = await import('stripe');
  const options: Stripe.StripeConfig = {
    maxNetworkRetries: 1,
    timeout: timeoutMs,
    appInfo: { name: 'Kassa' },
  };
  const url = new URL(config.apiUrl);
  if (url.origin !== 'https://api.stripe.com') {
    const protocol = url.protocol === 'http:' ? 'http' : 'https';
    options.protocol = protocol;
    options.host = url.hostname;
    options.port = url.port || (protocol === 'http' ? 80 : 443);
  }
  return new StripeSdk(config.secretKey ?? 'sk_unset', options);
}

type StripeErrorLike = {
  type?: string;
  statusCode?: number;
  code?: string;
  decline_code?: string;
  param?: string;
  message?: string;
  payment_intent?: Stripe.PaymentIntent;
  setup_intent?: Stripe.SetupIntent;
};

export function isStripeError(error: unknown): error is StripeErrorLike & Error {
  return error instanceof Error && typeof (error as StripeErrorLike).type === 'string' && 'rawType' in error;
}

/** The outcome of a write that threw. */
export function outcomeOfError(error: unknown): ProviderOutcome {
  if (!isStripeError(error)) return { status: 'unknown', reason: String(error) };
  const message = error.message ?? 'Stripe refused the request.';
  switch (error.type) {
    case 'StripeCardError': {
      const code = error.decline_code ?? error.code ?? 'card_declined';
      return { status: 'failed', code, message, retryable: isRetryableDecline(code) };
    }
    case 'StripeInvalidRequestError':
      // 409: the same key is still being processed; its outcome is not known yet.
      if (error.statusCode === 409) return { status: 'unknown', reason: message };
      return {
        status: 'failed',
        code: error.code ?? 'invalid_request',
        message,
        retryable: false,
        // An invalid request is not a provider error (retried hourly, never dunned): one Stripe will
        // refuse again (a deleted customer, an amount it refuses, an intent in the wrong state) would
        // then hold the subscription in processing for ever. It takes the dunning path like a decline;
        // only a refused key or a rate limit (below) is the provider's.
      };
    case 'StripeRateLimitError':
      return { status: 'failed', code: 'rate_limited', message, retryable: true, providerError: true };
    case 'StripeAuthenticationError':
    case 'StripePermissionError':
      return {
        status: 'failed',
        code: 'provider_authentication',
        message,
        retryable: false,
        providerError: true,
      };
    default:
      // StripeAPIError (5xx), StripeConnectionError, StripeIdempotencyError: Stripe may have acted.
      return { status: 'unknown', reason: `${error.type}: ${message}` };
  }
}

/** Lower-case ISO currency, as Stripe wants it. */
export const stripeCurrency = (currency: string) => currency.toLowerCase();

/** The id of an expandable field (a string, or the object when expanded). */
export function idOf(value: string | { id: string } | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : value.id;
}
