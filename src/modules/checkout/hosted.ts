// GET /api/checkout/{token}/: what the hosted page shows, and with a provider that collects the card in its
// own form (Stripe) what that form needs. The token is the customer's capability.
import type { AppContext } from '../../context.ts';
import { NotFoundError } from '../../http/errors.ts';
import { formatAmount, formatPercent, toBigInt } from '../../lib/money.ts';
import type { NextAction } from '../../provider/types.ts';
import { presentAttempt } from '../payments/present.ts';
import * as payments from '../payments/store.ts';
import type { DepositAttemptRow, PaymentRow } from '../payments/table.ts';
import { pendingSetupAction, signupTerms } from '../subscriptions/signup.ts';
import { customerErrorMessage } from './card-testing.ts';
import { type CheckoutItem, lineAmount } from './pricing.ts';
import { providerForm } from './provider-form.ts';
import { checkoutState, redirectUrl, syncStatusOf } from './status.ts';
import * as store from './store.ts';
import type { CheckoutSessionRow } from './table.ts';

interface StoredItem {
  product_id: string | null;
  name: string;
  unit_price: number;
  quantity: number;
}

export function itemsOf(session: CheckoutSessionRow): CheckoutItem[] {
  return (JSON.parse(session.items) as StoredItem[]).map((item) => ({
    productId: item.product_id,
    name: item.name,
    unitPrice: BigInt(item.unit_price),
    quantity: item.quantity,
  }));
}

/** What Kassa puts on the provider's payment object (Stripe: the PaymentIntent's metadata). */
export function paymentMetadata(session: CheckoutSessionRow, payment: PaymentRow): Record<string, string> {
  return {
    kassa_checkout_id: session.public_id,
    kassa_transaction_id: payment.public_id,
    kassa_environment: session.environment,
  };
}

/** What the customer must do before the attempt can finish (3-D Secure), as the hosted page reads it. */
export function presentNextAction(payment: Pick<PaymentRow, 'next_action' | 'status'> | undefined) {
  if (!payment?.next_action || payment.status !== 'processing') return null;
  return presentAction(JSON.parse(payment.next_action) as NextAction);
}

/** A next action (a payment's, or a card setup's) as the hosted page reads it. */
export function presentAction(action: NextAction) {
  if (action.type === 'simulator_challenge') {
    return {
      type: action.type,
      challenge_id: action.challengeId,
      url: `/api/provider/simulator/challenges/${action.challengeId}/`,
    };
  }
  return { type: action.type };
}

/**
 * An attempt as the hosted page shows it: the interface's fields plus the card's brand and last 4, with
 * one generic decline message instead of the bank's reason (card testing: see card-testing.ts).
 */
export function presentHostedAttempt(row: Omit<DepositAttemptRow, 'id'>) {
  return {
    ...presentAttempt(row),
    errorMessage: customerErrorMessage(row.error_message),
    cardBrand: row.card_brand,
    cardLast4: row.card_last4,
  };
}

export async function findSessionByToken(ctx: AppContext, token: string): Promise<CheckoutSessionRow> {
  const session = await store.findByToken(ctx.db, token);
  if (!session) throw new NotFoundError('Checkout not found.');
  return session;
}

/** The session of a token and its payment, if any, in one read (pay and sync-status start here). */
export async function findSessionAndPaymentByToken(ctx: AppContext, token: string) {
  const found = await store.findByTokenWithPayment(ctx.db, token);
  if (!found) throw new NotFoundError('Checkout not found.');
  return found;
}

/**
 * What the hosted page shows (`checkout`), and `retryAfterS`: the seconds after which the page should read
 * again, when the provider did not answer the open of its payment form (provider-form.ts), else null.
 */
export async function getHostedCheckout(ctx: AppContext, token: string) {
  const session = await findSessionByToken(ctx, token);
  const [form, organization] = await Promise.all([
    providerForm(ctx, session),
    store.organizationTerms(ctx.db, session.organization_id),
  ]);
  const payment = form.payment;
  const attempts = payment ? await payments.attemptsOf(ctx.db, payment.id) : [];
  const state = checkoutState(session, payment, ctx.clock());
  const syncStatus = syncStatusOf(state);
  const open = state === 'open';
  const checkout = {
    checkout_id: session.public_id,
    order_id: session.public_id,
    status: state,
    sync_status: syncStatus,
    payment_status: payment?.status ?? null,
    transaction_id: payment?.public_id ?? null,
    environment: session.environment,
    merchant: { name: organization.name, website: organization.website || null },
    currency: session.currency,
    price_mode: session.price_mode,
    tax_rate_percent: formatPercent(toBigInt(session.tax_rate_bp)),
    items: itemsOf(session).map((item, index) => ({
      id: item.productId ?? `item_${index + 1}`,
      name: item.name,
      unit_price: formatAmount(item.unitPrice),
      quantity: item.quantity,
      amount: formatAmount(lineAmount(item)),
    })),
    subtotal: formatAmount(toBigInt(session.subtotal_ht)),
    tax: formatAmount(toBigInt(session.tax_amount)),
    total: formatAmount(toBigInt(session.gross)),
    // The token outlives the checkout (it sits in browser history and redirect logs): once the checkout
    // is finished its answer no longer names the customer.
    customer:
      state === 'open' || state === 'pending'
        ? {
            first_name: session.billing_first_name,
            last_name: session.billing_last_name,
            email: session.billing_email,
            country: session.billing_country,
          }
        : null,
    attempts: attempts.map(presentHostedAttempt),
    urls: {
      success_url: session.success_url,
      failed_url: session.failed_url,
      cancel_url: session.cancel_url,
    },
    redirect_url: redirectUrl(session, syncStatus),
    expires_at: Math.floor(Date.parse(session.expires_at) / 1000),
    provider: form.provider,
    next_action: presentNextAction(payment) ?? (open ? await pendingSetupAction(ctx, session) : null),
    subscription: await signupTerms(ctx, session),
  };
  return { checkout, retryAfterS: form.retryAfterS };
}
