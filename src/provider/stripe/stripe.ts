// The Stripe connector (KASSA_PROVIDER=stripe) over the official SDK. Stateless, like every connector:
// Kassa's request becomes Stripe's call (with Kassa's idempotency key), Stripe's answer a contract value.
// Hosted payments are PaymentIntents the customer confirms in Stripe's Payment Element (card data never
// reaches Kassa), so `cardForm` is false and chargeCard is refused. Reads re-fetch the PaymentIntent and
// its charges; a lost write is found by searching PaymentIntents on metadata[kassa_transaction_id], and a
// refund among its PaymentIntent's refunds by metadata[kassa_refund_id].
import type Stripe from 'stripe';
import type { Config, StripeConfig } from '../../config.ts';
import type {
  ChargeCardInput,
  ChargeSavedCardInput,
  CreateCustomerInput,
  CreateRefundInput,
  OpenedPayment,
  OpenPaymentInput,
  PaymentProvider,
  PaymentWrite,
  ProviderNotice,
  ProviderPaymentState,
  ProviderRefundState,
  ProviderSetupState,
  SetupCardInput,
  SetupWrite,
} from '../types.ts';
import { outcomeOfIntent, paymentStateOf, refundStateOf, setupStateOf } from './transforms.ts';
import { createStripeClient, idOf, isStripeError, outcomeOfError, stripeCurrency } from './transport.ts';
import { parseStripeWebhook } from './webhooks.ts';

/**
 * What a payment or setup that saves a card for renewals allows. `allowed_payment_method_types` is the
 * pinned API version's name for the former `payment_method_types` parameter (stripe-node 23 removed it).
 */
const CARD_ONLY: Stripe.PaymentIntentCreateParams.AllowedPaymentMethodType[] = ['card'];

function isMissing(error: unknown): boolean {
  return isStripeError(error) && (error.statusCode === 404 || error.code === 'resource_missing');
}

/** A read of an object by id: null when Stripe has no such object. */
async function orNull<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (error) {
    if (isMissing(error)) return null;
    throw error;
  }
}

export class StripeProvider implements PaymentProvider {
  readonly name = 'stripe';
  readonly cardForm = false;
  private readonly config: StripeConfig;
  private readonly timeoutMs: number;
  private client: Promise<Stripe> | null = null;

  constructor(stripe: StripeConfig, config: Pick<Config, 'providerTimeoutMs'>) {
    this.config = stripe;
    this.timeoutMs = config.providerTimeoutMs;
  }

  /** The SDK client, made on first use. */
  api(): Promise<Stripe> {
    this.client ??= createStripeClient(this.config, this.timeoutMs);
    return this.client;
  }

  private async stateOf(intent: Stripe.PaymentIntent): Promise<ProviderPaymentState> {
    const stripe = await this.api();
    const charges = await stripe.charges.list({ payment_intent: intent.id, limit: 100 });
    return paymentStateOf(intent, charges.data);
  }

  async openPayment(input: OpenPaymentInput): Promise<OpenedPayment> {
    const stripe = await this.api();
    const intent = await stripe.paymentIntents.create(
      {
        amount: Number(input.amountMinor),
        currency: stripeCurrency(input.currency),
        // The reference always rides along: it is how a write whose answer was lost is found.
        metadata: { ...input.metadata, kassa_transaction_id: input.reference },
        // A payment that saves the card for renewals takes cards only: a subscription renews a card
        // (brand, last 4, expiry), and a method saved without one (Link, a bank debit) would leave a
        // paid signup with no subscription. Other payments take whatever the account has enabled.
        ...(input.saveCardFor
          ? {
              customer: input.saveCardFor,
              setup_future_usage: 'off_session' as const,
              allowed_payment_method_types: CARD_ONLY,
            }
          : { automatic_payment_methods: { enabled: true } }),
      },
      { idempotencyKey: input.idempotencyKey },
    );
    return { payment: await this.stateOf(intent), clientSecret: intent.client_secret };
  }

  async chargeCard(_input: ChargeCardInput): Promise<PaymentWrite> {
    throw new Error('Stripe takes the card in its Payment Element; card data is never sent to Kassa.');
  }

  /**
   * The PaymentIntent an earlier write made for this payment, by a consistent read. An earlier try whose
   * answer was lost may have made one that Stripe's search does not show yet (search is not
   * read-after-write consistent: a minute behind, more during an outage, exactly when answers get
   * lost), so the reconciler took the try for never made; a new PaymentIntent would charge the period
   * twice. The customer's PaymentIntents are listed instead (newest first; one per period).
   */
  private async madeEarlier(customer: string, reference: string): Promise<Stripe.PaymentIntent | null> {
    const stripe = await this.api();
    const listed = await stripe.paymentIntents.list({ customer, limit: 100 });
    return listed.data.find((intent) => intent.metadata?.kassa_transaction_id === reference) ?? null;
  }

  async chargeSavedCard(input: ChargeSavedCardInput): Promise<PaymentWrite> {
    const stripe = await this.api();
    const options = { idempotencyKey: input.idempotencyKey };
    let providerPaymentId = input.payment.providerPaymentId;
    if (providerPaymentId === null) {
      let earlier: Stripe.PaymentIntent | null;
      try {
        earlier = await this.madeEarlier(input.customerId, input.payment.reference);
      } catch (error) {
        // Stripe refused the read (a revoked key, a rate limit): nothing was made, and that is the answer.
        const outcome = outcomeOfError(error);
        if (outcome.status !== 'failed') throw error;
        return { outcome, payment: null };
      }
      // Charged (or being charged) already: that is the answer, with no new charge.
      if (earlier && ['succeeded', 'processing', 'requires_capture'].includes(earlier.status))
        return { outcome: outcomeOfIntent(earlier), payment: await this.stateOf(earlier) };
      providerPaymentId = earlier?.id ?? null;
    }
    let intent: Stripe.PaymentIntent;
    try {
      intent =
        providerPaymentId === null
          ? await stripe.paymentIntents.create(
              {
                amount: Number(input.amountMinor),
                currency: stripeCurrency(input.currency),
                customer: input.customerId,
                payment_method: input.paymentMethodId,
                off_session: true,
                confirm: true,
                metadata: { ...input.metadata, kassa_transaction_id: input.payment.reference },
              },
              options,
            )
          : await stripe.paymentIntents.confirm(
              providerPaymentId,
              { payment_method: input.paymentMethodId, off_session: true },
              options,
            );
    } catch (error) {
      const outcome = outcomeOfError(error);
      if (outcome.status !== 'failed' || outcome.providerError === true) return { outcome, payment: null };
      // The PaymentIntent the answer is about, read as it stands: a decline leaves it waiting for a
      // payment method (the retry confirms it again); a confirm Stripe refused as an invalid request (an
      // intent in the wrong state: payment_intent_unexpected_state) may find it succeeded already (an
      // earlier confirm whose answer Kassa never recorded), still processing, or canceled. The refusal
      // says nothing of the charge: the caller goes by the state (dunning.ts, answerOfTry), never takes
      // the refusal alone for a decline. A read that fails throws: unknown, read back by the reconciler.
      // A PaymentIntent canceled at Stripe (an operator in the Dashboard) is final and was never charged:
      // the refusal is this try's failure, as `canceled`, and the next try charges a new payment (renew.ts).
      const intentId = (isStripeError(error) ? error.payment_intent?.id : undefined) ?? providerPaymentId;
      if (!intentId) return { outcome, payment: null };
      const current = await stripe.paymentIntents.retrieve(intentId);
      const payment = await this.stateOf(current);
      return { outcome: current.status === 'canceled' ? outcomeOfIntent(current) : outcome, payment };
    }
    return { outcome: outcomeOfIntent(intent), payment: await this.stateOf(intent) };
  }

  async getPayment(providerPaymentId: string): Promise<ProviderPaymentState | null> {
    const stripe = await this.api();
    return orNull(async () => this.stateOf(await stripe.paymentIntents.retrieve(providerPaymentId)));
  }

  async findPayment(reference: string): Promise<ProviderPaymentState | null> {
    const stripe = await this.api();
    const found = await stripe.paymentIntents.search({
      query: `metadata['kassa_transaction_id']:'${reference.replace(/'/g, '')}'`,
      limit: 10,
    });
    // Never two for one reference (one key); were there, the oldest is the one Kassa made first.
    const intent = [...found.data].sort((a, b) => a.created - b.created)[0];
    return intent ? this.stateOf(intent) : null;
  }

  async cancelPayment(providerPaymentId: string): Promise<ProviderPaymentState | null> {
    const stripe = await this.api();
    try {
      await stripe.paymentIntents.cancel(providerPaymentId, { cancellation_reason: 'abandoned' });
    } catch (error) {
      // Already succeeded, processing or canceled: Stripe refuses, and the state read below says which.
      if (!isStripeError(error) || error.type !== 'StripeInvalidRequestError') throw error;
    }
    return this.getPayment(providerPaymentId);
  }

  async clientSecretOf(providerPaymentId: string): Promise<string | null> {
    const stripe = await this.api();
    return (await stripe.paymentIntents.retrieve(providerPaymentId)).client_secret;
  }

  async createCustomer(input: CreateCustomerInput): Promise<{ customerId: string }> {
    const stripe = await this.api();
    const customer = await stripe.customers.create(
      {
        email: input.email,
        name: input.name,
        metadata: { ...input.metadata, kassa_reference: input.reference },
      },
      { idempotencyKey: input.idempotencyKey },
    );
    return { customerId: customer.id };
  }

  /** A SetupIntent the customer completes in the Payment Element (with 3-D Secure when the bank asks). */
  async setupCard(input: SetupCardInput): Promise<SetupWrite> {
    const stripe = await this.api();
    const intent = await stripe.setupIntents.create(
      {
        customer: input.customerId,
        usage: 'off_session',
        // Saved for a subscription's renewals: a card, nothing else (as openPayment's saveCardFor).
        allowed_payment_method_types: CARD_ONLY,
        // The key again in the metadata: Stripe keeps idempotency keys 24 hours and cannot be searched
        // by them; findSetup reads this back.
        metadata: {
          ...input.metadata,
          kassa_reference: input.reference,
          kassa_idempotency_key: input.idempotencyKey,
        },
      },
      { idempotencyKey: input.idempotencyKey },
    );
    const setup = await this.setupState(intent);
    const outcome: SetupWrite['outcome'] = intent.client_secret
      ? { status: 'requires_action', nextAction: { type: 'stripe_sdk', clientSecret: intent.client_secret } }
      : { status: 'pending' };
    return { outcome, setup, clientSecret: intent.client_secret };
  }

  private async setupState(intent: Stripe.SetupIntent): Promise<ProviderSetupState> {
    const stripe = await this.api();
    const methodId = idOf(intent.payment_method);
    const method =
      methodId && intent.status === 'succeeded' ? await stripe.paymentMethods.retrieve(methodId) : null;
    return setupStateOf(intent, method);
  }

  async getSetup(setupId: string): Promise<ProviderSetupState | null> {
    const stripe = await this.api();
    return orNull(async () => this.setupState(await stripe.setupIntents.retrieve(setupId)));
  }

  async findSetup(
    idempotencyKey: string,
    customerId: string,
    reference?: string,
  ): Promise<ProviderSetupState | null> {
    const stripe = await this.api();
    const list = await stripe.setupIntents.list({ customer: customerId, limit: 100 });
    const intent =
      list.data.find((candidate) => candidate.metadata?.kassa_idempotency_key === idempotencyKey) ??
      // A SetupIntent made before its key was put in its metadata (an answer lost across the upgrade
      // that added it): matched by reference, as it was then.
      (reference === undefined
        ? undefined
        : list.data.find(
            (candidate) =>
              candidate.metadata?.kassa_idempotency_key === undefined &&
              candidate.metadata?.kassa_reference === reference,
          ));
    return intent ? this.setupState(intent) : null;
  }

  async createRefund(input: CreateRefundInput): Promise<ProviderRefundState> {
    const stripe = await this.api();
    try {
      const refund = await stripe.refunds.create(
        {
          payment_intent: input.providerPaymentId,
          // The customer gets back what they paid: the refund in the charge currency (amount_in_cents
          // keeps its interface meaning, the HT basis, on Kassa's side).
          amount: Number(input.amountMinor),
          reason: 'requested_by_customer',
          metadata: input.metadata,
        },
        { idempotencyKey: input.idempotencyKey },
      );
      return refundStateOf(refund);
    } catch (error) {
      const outcome = outcomeOfError(error);
      if (outcome.status !== 'failed') throw error;
      return { providerRefundId: '', status: 'failed', errorMessage: outcome.message };
    }
  }

  async getRefund(providerRefundId: string): Promise<ProviderRefundState | null> {
    const stripe = await this.api();
    return orNull(async () => refundStateOf(await stripe.refunds.retrieve(providerRefundId)));
  }

  async findRefund(reference: string, providerPaymentId: string): Promise<ProviderRefundState | null> {
    const stripe = await this.api();
    const list = await stripe.refunds.list({ payment_intent: providerPaymentId, limit: 100 });
    const refund = list.data.find((candidate) => candidate.metadata?.kassa_refund_id === reference);
    return refund ? refundStateOf(refund) : null;
  }

  async parseWebhook(
    rawBody: string,
    headers: Record<string, string | string[] | undefined>,
  ): Promise<ProviderNotice> {
    return parseStripeWebhook(await this.api(), this.config.webhookSecret, rawBody, headers);
  }
}
