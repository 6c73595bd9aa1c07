// The provider side of the hosted page. The simulator's card form needs nothing. A provider with a form of
// its own (Stripe's Payment Element) needs its payment object before the customer types anything: so the
// first read of the hosted step opens the Kassa payment and, under its write-ahead operation row
// (kassa-pay-{id}), the provider payment; later reads fetch its client secret. Opening is not a charge, and
// the same key makes a repeat the same object, so a read that finds it not yet recorded opens it again.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { PROVIDER_RETRY_AFTER_S } from '../../http/errors.ts';
import { toBigInt } from '../../lib/money.ts';
import { callProvider } from '../../provider/operations/perform.ts';
import { recordOperation, settleOperation } from '../../provider/operations/store.ts';
import type { PaymentProvider, ProviderName } from '../../provider/types.ts';
import { lockLinkByUuid } from '../payment-links/store.ts';
import * as payments from '../payments/store.ts';
import type { PaymentRow } from '../payments/table.ts';
import { applyProviderState, openPaymentUnlessOpen } from '../payments/transitions.ts';
import { providerSetupSecret, savesCardOnly, signupCustomer } from '../subscriptions/signup.ts';
import { itemsOf, paymentMetadata } from './hosted.ts';
import { checkoutState } from './status.ts';
import * as store from './store.ts';
import type { CheckoutSessionRow } from './table.ts';

export interface ProviderForm {
  payment: PaymentRow | undefined;
  /**
   * Seconds the page should wait before it reads the checkout again: set when the provider did not answer
   * the open (no client secret yet), sent as the 200's Retry-After; null otherwise.
   */
  retryAfterS: number | null;
  provider: {
    name: ProviderName;
    publishable_key?: string;
    client_secret?: string | null;
    /** setup: a trial signup's card is only saved (Stripe.js confirmSetup, not confirmPayment). */
    mode?: 'payment' | 'setup';
  };
}

/**
 * Opens the Kassa payment of a checkout (processing): fee and FX are fixed here. In the caller's
 * transaction. `feeBp`: the organization's fee, when the caller read it (else it is read here).
 */
export async function openCheckoutPayment(
  ctx: AppContext,
  trx: Executor,
  session: CheckoutSessionRow,
  provider: PaymentProvider,
  nowIso: string,
  feeBp: number | null = null,
): Promise<PaymentRow> {
  const payment = await openCheckoutPaymentUnlessOpen(ctx, trx, session, provider, nowIso, feeBp);
  if (!payment) throw new Error(`checkout ${session.public_id} already has a payment`);
  return payment;
}

/** openCheckoutPayment, or undefined (nothing written) when the checkout has its payment already. */
export async function openCheckoutPaymentUnlessOpen(
  ctx: AppContext,
  trx: Executor,
  session: CheckoutSessionRow,
  provider: PaymentProvider,
  nowIso: string,
  feeBp: number | null = null,
): Promise<PaymentRow | undefined> {
  const fee = feeBp ?? (await store.organizationTerms(trx, session.organization_id)).fee_bp;
  return openPaymentUnlessOpen(
    trx,
    session,
    {
      feeBp: toBigInt(fee),
      fxEurUsd: ctx.config.fxEurUsd,
      provider: provider.name,
      simulated: provider.name === 'simulator',
      items: itemsOf(session),
    },
    nowIso,
  );
}

/**
 * Before a checkout's first payment is opened, in the transaction that holds the session's lock. A link
 * checkout's first payment turns its reservation into a use, and a start counting the link's uses holds
 * the link's lock: this takes it (lock order session, then link) and answers the clock after it, by which
 * the caller judges the checkout's expiry, so a start that found the checkout expired and unpaid (its use
 * given back) is never followed by its payment, and one that waits for it counts it. Any other checkout:
 * `now`, nothing locked. Both the card attempt (pay.ts) and the provider's own form (below) call it.
 */
export async function lockLinkForFirstPayment(
  ctx: AppContext,
  trx: Executor,
  session: CheckoutSessionRow,
  now: Date,
): Promise<Date> {
  if (session.payment_link_id === null) return now;
  await lockLinkByUuid(trx, session.organization_id, session.payment_link_id);
  return ctx.clock();
}

/**
 * Step 1: the Kassa payment and the operation row of its provider payment, in one transaction; nothing
 * (no operation) when the checkout, read again under its lock, is no longer open (expired or canceled
 * since the page's read): a payment opened then could be confirmed in the provider's form.
 */
async function openForForm(ctx: AppContext, sessionId: number, provider: PaymentProvider) {
  const now = ctx.clock();
  const nowIso = now.toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    const session = await store.lockSession(trx, sessionId);
    const existing = await payments.paymentOfCheckout(trx, session.id);
    const checkedAt = existing === undefined ? await lockLinkForFirstPayment(ctx, trx, session, now) : now;
    if (checkoutState(session, existing, checkedAt) !== 'open') {
      return { session, payment: existing, operation: null };
    }
    const payment = existing ?? (await openCheckoutPayment(ctx, trx, session, provider, nowIso));
    const operation = await recordOperation(
      trx,
      {
        kind: 'payment_open',
        idempotencyKey: `kassa-pay-${payment.public_id}`,
        provider: provider.name,
        environment: session.environment,
        organizationId: session.organization_id,
        subjectType: 'payment',
        subjectId: payment.id,
        reference: payment.public_id,
      },
      nowIso,
      ctx.config.reconcileScheduleMs,
    );
    return { session, payment, operation };
  });
}

/** Opens the provider payment (again, under the same key, when its answer was never recorded). */
async function openAtProvider(
  ctx: AppContext,
  sessionId: number,
  provider: PaymentProvider,
  saveCardFor: string | null,
) {
  const { session, payment, operation } = await openForForm(ctx, sessionId, provider);
  // Not open any more, or opened meanwhile by another read (whose client secret the next read fetches).
  if (operation === null || payment.provider_payment_id !== null)
    return { payment, clientSecret: null, answered: true };
  const call = await callProvider(ctx.config, operation, () =>
    provider.openPayment({
      idempotencyKey: operation.idempotency_key,
      reference: payment.public_id,
      environment: session.environment,
      amountMinor: toBigInt(payment.gross),
      currency: payment.currency,
      refundBasisMinor: toBigInt(payment.gross_ht),
      metadata: paymentMetadata(session, payment),
      saveCardFor,
    }),
  );
  return ctx.db.transaction().execute(async (trx) => {
    const nowIso = ctx.clock().toISOString();
    if (!call.answered) {
      await settleOperation(trx, operation.id, { status: 'unknown', reason: call.reason }, null, nowIso);
      return { payment, clientSecret: null, answered: false };
    }
    const opened = call.value;
    const applied = await applyProviderState(trx, payment.id, opened.payment, nowIso, null, session);
    await settleOperation(
      trx,
      operation.id,
      { status: 'succeeded' },
      opened.payment.providerPaymentId,
      nowIso,
    );
    return { payment: applied.payment, clientSecret: opened.clientSecret, answered: true };
  });
}

export async function providerForm(ctx: AppContext, session: CheckoutSessionRow): Promise<ProviderForm> {
  const provider = ctx.providers.forEnvironment(session.environment);
  let payment = await payments.paymentOfCheckout(ctx.db, session.id);
  if (provider.cardForm) return { payment, retryAfterS: null, provider: { name: provider.name } };
  const publishableKey = ctx.config.stripe.publishableKey ?? '';
  // A signup: with a trial the card is only saved (a setup); without, the first payment saves it.
  let saveCardFor: string | null = null;
  if (session.subscription_plan_id !== null) {
    if (await savesCardOnly(ctx.db, session)) {
      const secret = await providerSetupSecret(ctx, session);
      return {
        payment: undefined,
        retryAfterS: null,
        provider: {
          name: provider.name,
          publishable_key: publishableKey,
          client_secret: secret,
          mode: 'setup',
        },
      };
    }
    saveCardFor = await signupCustomer(ctx, session);
  }
  let clientSecret: string | null = null;
  let answered = true;
  const open = checkoutState(session, payment, ctx.clock()) === 'open';
  if (open && (!payment || payment.provider_payment_id === null)) {
    ({ payment, clientSecret, answered } = await openAtProvider(ctx, session.id, provider, saveCardFor));
  } else if (payment?.provider_payment_id && payment.status === 'processing') {
    clientSecret = await provider.clientSecretOf(payment.provider_payment_id);
  }
  return {
    payment,
    // The open got no answer: still a 200 (the next read opens it again, under the same key), paced as the
    // provider's 503s are (http/errors.ts), so the page reads again when the server says.
    retryAfterS: answered ? null : PROVIDER_RETRY_AFTER_S,
    provider: { name: provider.name, publishable_key: publishableKey, client_secret: clientSecret },
  };
}
