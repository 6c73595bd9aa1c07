// What the fake Stripe knows and how it behaves: PaymentIntents confirmed with the test payment methods
// (cards.ts), 3-D Secure the test answers, SetupIntents, customers, refunds, and an event for every change.
import type Stripe from 'stripe';
import { type CardBehaviour, TEST_PAYMENT_METHODS, type TestCard } from './cards.ts';
import { type FormObject, record, text } from './form.ts';
import * as make from './objects.ts';

/** An answer with an error status: the body is Stripe's {error: {...}}, typed with the SDK's raw error. */
export class StripeApiError extends Error {
  readonly status: number;
  readonly body: { error: Stripe.StripeRawError };
  constructor(status: number, error: Stripe.StripeRawError) {
    super(String(error.message));
    this.status = status;
    this.body = { error };
  }
}

/**
 * Stripe's refusal of a request on a PaymentIntent in the wrong state: a 400 naming the PaymentIntent as it
 * stands (the request changed nothing), with the code's documentation page, as Stripe answers it.
 */
const unexpectedState = (message: string, intent: Stripe.PaymentIntent) =>
  new StripeApiError(400, {
    type: 'invalid_request_error',
    code: 'payment_intent_unexpected_state',
    doc_url: 'https://stripe.com/docs/error-codes/payment-intent-unexpected-state',
    message,
    payment_intent: structuredClone(intent),
  });

/** Stripe's list in its refusal of a cancel (which also names `processing`: see cancelPaymentIntent). */
const CANCELABLE_LIST =
  'requires_payment_method, requires_capture, requires_confirmation, requires_action, processing';

const missing = (what: string, id: string) =>
  new StripeApiError(404, {
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: `No such ${what}: '${id}'`,
  });

const invalid = (message: string, code = 'parameter_invalid') =>
  new StripeApiError(400, { type: 'invalid_request_error', code, message });

const AUTH_REQUIRED = {
  code: 'authentication_required',
  declineCode: 'authentication_required',
  message: 'Your card was declined. This transaction requires authentication.',
};

type Decline = NonNullable<TestCard['decline']>;

/**
 * allowed_payment_method_types of a create (null: the account's enabled methods). The pinned API version
 * no longer takes payment_method_types, and Stripe refuses a parameter it does not know.
 */
function allowedTypesOf(params: FormObject): string[] | null {
  if (params.payment_method_types !== undefined)
    throw invalid('Received unknown parameter: payment_method_types', 'parameter_unknown');
  const allowed = params.allowed_payment_method_types;
  if (allowed === undefined) return null;
  const types = typeof allowed === 'string' ? [allowed] : Object.values(allowed).map(String);
  if (types.length === 0) throw invalid('Invalid array: allowed_payment_method_types');
  if (params.automatic_payment_methods !== undefined)
    throw invalid(
      'You may only specify one of these parameters: allowed_payment_method_types, automatic_payment_methods.',
      'parameters_exclusive',
    );
  return types;
}

/** As Stripe: an intent is confirmed only with a payment method of a type it allows. */
function refuseDisallowed(
  kind: 'PaymentIntent' | 'SetupIntent',
  allowed: string[],
  method: Stripe.PaymentMethod,
) {
  if (allowed.includes(method.type)) return;
  throw invalid(
    `The PaymentMethod provided (${method.type}) is not allowed for this ${kind}. Please attach a PaymentMethod of one of the following types: ${allowed.join(', ')}. Alternatively, update the allowed payment_method_types for this ${kind} to include "${method.type}".`,
    kind === 'PaymentIntent' ? 'payment_intent_invalid_parameter' : 'setup_intent_invalid_parameter',
  );
}

export class FakeStripeLedger {
  readonly intents = new Map<string, Stripe.PaymentIntent>();
  readonly charges = new Map<string, Stripe.Charge>();
  readonly refunds = new Map<string, Stripe.Refund>();
  readonly customers = new Map<string, Stripe.Customer>();
  readonly methods = new Map<string, Stripe.PaymentMethod>();
  readonly setups = new Map<string, Stripe.SetupIntent>();
  readonly events: Stripe.Event[] = [];
  /** How new refunds answer: succeeded at once (cards, as Stripe does) or pending until settled. */
  refundMode: 'succeeded' | 'pending' = 'succeeded';
  /**
   * Stripe's search is not read-after-write consistent (data usually within a minute, later during an
   * outage): while this is set, a search finds none of the PaymentIntents made meanwhile. Lists and
   * retrieves are consistent, as Stripe's are.
   */
  searchLagSince: number | null = null;
  private readonly cards = new Map<string, TestCard>();
  /** Saved cards whose setup was authenticated: later off-session charges need no 3-D Secure. */
  private readonly authenticated = new Set<string>();
  private readonly apiVersion: string;

  constructor(apiVersion: string) {
    this.apiVersion = apiVersion;
  }

  private emit(type: Stripe.Event['type'], object: { id: string; object: string }) {
    this.events.push(make.event(type as never, object as never, this.apiVersion));
  }

  // ---- Payment methods

  /** A test id (pm_card_visa) becomes a new payment method, as Stripe clones it; a pm_… id is looked up. */
  private method(id: string, customer: string | null): { method: Stripe.PaymentMethod; card: TestCard } {
    const test = TEST_PAYMENT_METHODS[id];
    if (test) {
      const method = make.paymentMethod(test, customer);
      this.methods.set(method.id, method);
      this.cards.set(method.id, test);
      return { method, card: test };
    }
    const method = this.methods.get(id);
    const card = this.cards.get(id);
    if (!method || !card) throw missing('payment_method', id);
    return { method, card };
  }

  retrievePaymentMethod(id: string) {
    const method = this.methods.get(id);
    if (!method) throw missing('payment_method', id);
    return method;
  }

  // ---- PaymentIntents

  intent(id: string) {
    const intent = this.intents.get(id);
    if (!intent) throw missing('payment_intent', id);
    return intent;
  }

  createPaymentIntent(params: FormObject) {
    const amount = Number(text(params, 'amount'));
    if (!Number.isInteger(amount) || amount < 1) throw invalid('Invalid integer: amount');
    const currency = text(params, 'currency');
    if (!currency || currency !== currency.toLowerCase()) throw invalid('Invalid currency');
    const customer = text(params, 'customer') ?? null;
    if (customer && !this.customers.has(customer)) throw missing('customer', customer);
    const usage = text(params, 'setup_future_usage');
    const intent = make.paymentIntent({
      amount,
      currency,
      metadata: record(params, 'metadata'),
      customer,
      setupFutureUsage: usage === 'off_session' || usage === 'on_session' ? usage : null,
      allowedTypes: allowedTypesOf(params),
    });
    this.intents.set(intent.id, intent);
    this.emit('payment_intent.created', intent);
    if (text(params, 'confirm') === 'true') return this.confirmPaymentIntent(intent.id, params);
    return intent;
  }

  confirmPaymentIntent(id: string, params: FormObject) {
    const intent = this.intent(id);
    if (!['requires_payment_method', 'requires_confirmation', 'requires_action'].includes(intent.status)) {
      throw unexpectedState(
        intent.status === 'succeeded'
          ? 'You cannot confirm this PaymentIntent because it has already succeeded after being previously confirmed.'
          : `You cannot confirm this PaymentIntent because it has a status of ${intent.status}. Only a PaymentIntent with one of the following statuses may be confirmed: requires_confirmation, requires_payment_method, requires_action.`,
        intent,
      );
    }
    const methodId =
      text(params, 'payment_method') ??
      (typeof intent.payment_method === 'string' ? intent.payment_method : null);
    if (!methodId)
      throw invalid('You must provide a payment_method to confirm this PaymentIntent.', 'parameter_missing');
    const customer = typeof intent.customer === 'string' ? intent.customer : null;
    const { method, card } = this.method(methodId, intent.setup_future_usage ? customer : null);
    refuseDisallowed('PaymentIntent', intent.payment_method_types, method);
    const offSession = text(params, 'off_session') === 'true';
    intent.payment_method = method.id;
    intent.last_payment_error = null;
    intent.next_action = null;
    switch (this.answer(card.behaviour, offSession, method.id)) {
      case 'succeed':
        return this.succeed(intent, method, card, false);
      case 'authenticate':
        intent.status = 'requires_action';
        intent.next_action = { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect' } };
        this.emit('payment_intent.requires_action', intent);
        return intent;
      case 'processing': {
        const pending = make.charge({
          intent,
          method,
          card,
          status: 'pending',
          failure: null,
          authenticated: false,
        });
        this.charges.set(pending.id, pending);
        intent.latest_charge = pending.id;
        intent.status = 'processing';
        this.emit('payment_intent.processing', intent);
        return intent;
      }
      case 'authentication_required':
        return this.decline(intent, method, card, AUTH_REQUIRED);
      default:
        return this.decline(intent, method, card, card.decline ?? AUTH_REQUIRED);
    }
  }

  private answer(behaviour: CardBehaviour, offSession: boolean, methodId: string) {
    switch (behaviour) {
      case 'succeed':
      case 'processing':
        return behaviour;
      case 'decline':
        return 'decline';
      case 'decline_off_session':
        return offSession ? 'decline' : 'succeed';
      case 'authenticate_always':
        return offSession ? 'authentication_required' : 'authenticate';
      case 'authenticate_on_setup':
        if (!offSession) return 'authenticate';
        return this.authenticated.has(methodId) ? 'succeed' : 'authentication_required';
    }
  }

  private succeed(
    intent: Stripe.PaymentIntent,
    method: Stripe.PaymentMethod,
    card: TestCard,
    authenticated: boolean,
  ) {
    const succeeded = make.charge({
      intent,
      method,
      card,
      status: 'succeeded',
      failure: null,
      authenticated,
    });
    this.charges.set(succeeded.id, succeeded);
    intent.status = 'succeeded';
    intent.amount_received = intent.amount;
    intent.latest_charge = succeeded.id;
    intent.next_action = null;
    if (intent.setup_future_usage && typeof intent.customer === 'string') {
      method.customer = intent.customer;
      if (authenticated) this.authenticated.add(method.id);
    }
    this.emit('charge.succeeded', succeeded);
    this.emit('payment_intent.succeeded', intent);
    return intent;
  }

  private decline(
    intent: Stripe.PaymentIntent,
    method: Stripe.PaymentMethod,
    card: TestCard,
    decline: Decline,
  ): never {
    const failed = make.charge({
      intent,
      method,
      card,
      status: 'failed',
      failure: { code: decline.declineCode, message: decline.message },
      authenticated: false,
    });
    this.charges.set(failed.id, failed);
    intent.status = 'requires_payment_method';
    intent.latest_charge = failed.id;
    intent.last_payment_error = {
      type: 'card_error',
      code: decline.code,
      decline_code: decline.declineCode,
      message: decline.message,
      charge: failed.id,
      payment_method: method,
    };
    this.emit('charge.failed', failed);
    this.emit('payment_intent.payment_failed', intent);
    throw new StripeApiError(402, {
      type: 'card_error',
      code: decline.code,
      decline_code: decline.declineCode,
      message: decline.message,
      charge: failed.id,
      payment_intent: structuredClone(intent),
    });
  }

  cancelPaymentIntent(id: string, params: FormObject) {
    const intent = this.intent(id);
    if (
      !['requires_payment_method', 'requires_action', 'requires_confirmation', 'requires_capture'].includes(
        intent.status,
      )
    ) {
      // As Stripe: a canceled or succeeded PaymentIntent is refused with this 400 and Stripe's own words
      // (its list names `processing`, which Stripe cancels only "in rare cases"). The fake refuses every
      // processing one: its payment method is with the bank, which may still pay it.
      throw unexpectedState(
        `You cannot cancel this PaymentIntent because it has a status of ${intent.status}. Only a PaymentIntent with one of the following statuses may be canceled: ${CANCELABLE_LIST}.`,
        intent,
      );
    }
    const reason = text(params, 'cancellation_reason');
    intent.status = 'canceled';
    intent.canceled_at = make.now();
    intent.cancellation_reason =
      reason === 'abandoned' ||
      reason === 'duplicate' ||
      reason === 'fraudulent' ||
      reason === 'requested_by_customer'
        ? reason
        : null;
    intent.next_action = null;
    this.emit('payment_intent.canceled', intent);
    return intent;
  }

  /** The customer's 3-D Secure answer, as Stripe.js would bring it back. */
  authenticate(id: string, approve: boolean) {
    if (id.startsWith('seti_')) return this.authenticateSetup(id, approve);
    const intent = this.intent(id);
    if (intent.status !== 'requires_action' || typeof intent.payment_method !== 'string') {
      throw invalid(`PaymentIntent ${id} is not waiting for authentication.`);
    }
    const { method, card } = this.method(intent.payment_method, null);
    if (approve) return this.succeed(intent, method, card, true);
    intent.status = 'requires_payment_method';
    intent.next_action = null;
    intent.last_payment_error = {
      type: 'invalid_request_error',
      code: 'payment_intent_authentication_failure',
      message:
        'We are unable to authenticate your payment method. Please choose a different payment method and try again.',
      payment_method: method,
    };
    this.emit('payment_intent.payment_failed', intent);
    return intent;
  }

  /**
   * An asynchronous payment method's money arrived (or not). Only a processing PaymentIntent is decided
   * (anything else is refused, as a test error). A decline is what Stripe shows of a bank debit that
   * failed: the pending charge failed, the PaymentIntent back at requires_payment_method with the decline
   * as its last_payment_error (so its client secret can confirm it again, and Kassa may cancel it), and
   * charge.failed and payment_intent.payment_failed events.
   */
  settleProcessing(id: string, succeed = true) {
    const intent = this.intent(id);
    const pending = this.charges.get(String(intent.latest_charge));
    if (intent.status !== 'processing' || !pending) throw invalid(`PaymentIntent ${id} is not processing.`);
    if (succeed) {
      pending.status = 'succeeded';
      pending.paid = true;
      pending.captured = true;
      pending.amount_captured = pending.amount;
      intent.status = 'succeeded';
      intent.amount_received = intent.amount;
      this.emit('charge.succeeded', pending);
      this.emit('payment_intent.succeeded', intent);
    } else {
      const message = 'The payment was declined by the bank.';
      pending.status = 'failed';
      pending.failure_code = 'generic_decline';
      pending.failure_message = message;
      if (pending.outcome) {
        pending.outcome.network_status = 'declined_by_network';
        pending.outcome.reason = 'generic_decline';
        pending.outcome.seller_message = 'The bank declined the payment.';
        pending.outcome.type = 'issuer_declined';
      }
      intent.status = 'requires_payment_method';
      intent.next_action = null;
      intent.last_payment_error = {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'generic_decline',
        message,
        charge: pending.id,
        payment_method: this.retrievePaymentMethod(String(pending.payment_method)),
      };
      this.emit('charge.failed', pending);
      this.emit('payment_intent.payment_failed', intent);
    }
    return intent;
  }

  chargesOf(intentId: string): Stripe.Charge[] {
    return [...this.charges.values()]
      .filter((charge) => charge.payment_intent === intentId)
      .sort((a, b) => b.created - a.created);
  }

  searchIntents(query: string): Stripe.PaymentIntent[] {
    const match = /^metadata\['([\w]+)'\]:'([^']*)'$/.exec(query.trim());
    if (!match) throw invalid(`Unsupported search query: ${query}`);
    const lag = this.searchLagSince;
    return [...this.intents.values()].filter(
      (intent) => intent.metadata[match[1]] === match[2] && (lag === null || intent.created < lag),
    );
  }

  /** A customer's PaymentIntents, newest first (GET /v1/payment_intents?customer=). */
  intentsOf(customer: string | null): Stripe.PaymentIntent[] {
    return [...this.intents.values()]
      .filter((intent) => customer === null || intent.customer === customer)
      .sort((a, b) => b.created - a.created);
  }

  // ---- Refunds

  createRefund(params: FormObject) {
    const intent = this.intent(text(params, 'payment_intent') ?? '');
    const chargeId = typeof intent.latest_charge === 'string' ? intent.latest_charge : null;
    const paid = chargeId ? this.charges.get(chargeId) : undefined;
    if (intent.status !== 'succeeded' || !paid) {
      throw invalid(
        `PaymentIntent ${intent.id} does not have a successful charge to refund.`,
        'charge_not_refundable',
      );
    }
    const open = [...this.refunds.values()]
      .filter((known) => known.charge === paid.id && known.status === 'pending')
      .reduce((sum, known) => sum + known.amount, 0);
    const remaining = paid.amount - paid.amount_refunded - open;
    const amount = text(params, 'amount') === undefined ? remaining : Number(text(params, 'amount'));
    if (!Number.isInteger(amount) || amount < 1 || amount > remaining) {
      throw invalid(
        `Refund amount (${amount}) is greater than the unrefunded amount on the charge (${remaining}).`,
        'amount_too_large',
      );
    }
    const reason = text(params, 'reason');
    const created = make.refund({
      intent,
      chargeId: paid.id,
      amount,
      reason:
        reason === 'requested_by_customer' || reason === 'duplicate' || reason === 'fraudulent'
          ? reason
          : null,
      metadata: record(params, 'metadata'),
      status: 'pending',
    });
    this.refunds.set(created.id, created);
    this.emit('refund.created', created);
    if (this.refundMode === 'succeeded') this.settleRefund(created.id, 'succeeded');
    return created;
  }

  refund(id: string) {
    const found = this.refunds.get(id);
    if (!found) throw missing('refund', id);
    return found;
  }

  settleRefund(id: string, outcome: 'succeeded' | 'failed') {
    const refund = this.refund(id);
    if (refund.status !== 'pending') throw invalid(`Refund ${id} is ${refund.status}.`);
    const paid = this.charges.get(String(refund.charge));
    refund.status = outcome;
    if (outcome === 'succeeded' && paid) {
      paid.amount_refunded += refund.amount;
      paid.refunded = paid.amount_refunded >= paid.amount;
      this.emit('charge.refunded', paid);
    } else {
      refund.failure_reason = 'expired_or_canceled_card';
      this.emit('refund.failed', refund);
    }
    this.emit('refund.updated', refund);
    this.emit('charge.refund.updated', refund);
    return refund;
  }

  /**
   * A succeeded refund that fails afterwards, as Stripe documents can happen (the customer's card account
   * was closed): the money returns to the balance, the charge's refunded amount goes back down, and
   * refund.failed, refund.updated and charge.refund.updated are sent.
   */
  reverseRefund(id: string) {
    const refund = this.refund(id);
    if (refund.status !== 'succeeded') throw invalid(`Refund ${id} is ${refund.status}.`);
    const paid = this.charges.get(String(refund.charge));
    refund.status = 'failed';
    refund.failure_reason = 'lost_or_stolen_card';
    if (paid) {
      paid.amount_refunded -= refund.amount;
      paid.refunded = paid.amount_refunded >= paid.amount;
    }
    this.emit('refund.failed', refund);
    this.emit('refund.updated', refund);
    this.emit('charge.refund.updated', refund);
    return refund;
  }

  // ---- Customers and SetupIntents

  createCustomer(params: FormObject) {
    const created = make.customer({
      email: text(params, 'email') ?? null,
      name: text(params, 'name') ?? null,
      metadata: record(params, 'metadata'),
    });
    this.customers.set(created.id, created);
    return created;
  }

  customer(id: string) {
    const found = this.customers.get(id);
    if (!found) throw missing('customer', id);
    return found;
  }

  setup(id: string) {
    const found = this.setups.get(id);
    if (!found) throw missing('setup_intent', id);
    return found;
  }

  createSetupIntent(params: FormObject) {
    const customer = text(params, 'customer');
    if (!customer || !this.customers.has(customer)) throw missing('customer', String(customer));
    const created = make.setupIntent({
      customer,
      metadata: record(params, 'metadata'),
      usage: text(params, 'usage') ?? 'off_session',
      allowedTypes: allowedTypesOf(params),
    });
    this.setups.set(created.id, created);
    return created;
  }

  confirmSetupIntent(id: string, params: FormObject) {
    const setup = this.setup(id);
    const { method, card } = this.method(text(params, 'payment_method') ?? '', null);
    refuseDisallowed('SetupIntent', setup.payment_method_types, method);
    setup.payment_method = method.id;
    setup.last_setup_error = null;
    if (card.behaviour === 'decline') {
      const decline = card.decline ?? AUTH_REQUIRED;
      const error = {
        type: 'card_error',
        code: decline.code,
        decline_code: decline.declineCode,
        message: decline.message,
      } as const;
      setup.status = 'requires_payment_method';
      setup.last_setup_error = { ...error };
      this.emit('setup_intent.setup_failed', setup);
      throw new StripeApiError(402, { ...error, setup_intent: structuredClone(setup) });
    }
    if (card.behaviour === 'authenticate_always' || card.behaviour === 'authenticate_on_setup') {
      setup.status = 'requires_action';
      setup.next_action = { type: 'use_stripe_sdk', use_stripe_sdk: { type: 'three_d_secure_redirect' } };
      this.emit('setup_intent.requires_action', setup);
      return setup;
    }
    return this.setupSucceeded(setup, method);
  }

  private setupSucceeded(setup: Stripe.SetupIntent, method: Stripe.PaymentMethod) {
    method.customer = typeof setup.customer === 'string' ? setup.customer : null;
    setup.status = 'succeeded';
    setup.next_action = null;
    this.emit('setup_intent.succeeded', setup);
    return setup;
  }

  private authenticateSetup(id: string, approve: boolean) {
    const setup = this.setup(id);
    if (setup.status !== 'requires_action' || typeof setup.payment_method !== 'string') {
      throw invalid(`SetupIntent ${id} is not waiting for authentication.`);
    }
    const method = this.retrievePaymentMethod(setup.payment_method);
    if (approve) {
      this.authenticated.add(method.id);
      return this.setupSucceeded(setup, method);
    }
    setup.status = 'requires_payment_method';
    setup.next_action = null;
    setup.last_setup_error = {
      type: 'invalid_request_error',
      code: 'setup_intent_authentication_failure',
      message: 'We are unable to authenticate your payment method.',
    };
    this.emit('setup_intent.setup_failed', setup);
    return setup;
  }
}
