// POST /api/checkout/{token}/pay/: one card attempt. Recorded in three steps, never holding a transaction
// across the provider call: (1) reserve the attempt and create the payment on the first one, (2) ask the
// provider, (3) record its answer. Only the brand and last 4 digits are kept; the number is never
// stored or logged.
import type { AppContext } from '../../context.ts';
import { ConflictError, ValidationError } from '../../http/errors.ts';
import { toBigInt } from '../../lib/money.ts';
import { cardBrand, isLuhnValid, normaliseCardNumber } from '../../provider/cards.ts';
import type { CardInput } from '../../provider/types.ts';
import * as payments from '../payments/store.ts';
import type { PaymentRow } from '../payments/table.ts';
import { applyProviderState, openPayment } from '../payments/transitions.ts';
import { findSessionByToken, itemsOf, presentHostedAttempt } from './hosted.ts';
import type { PayInput } from './schemas.ts';
import { assertStillOpen, attemptInFlight, checkoutState, redirectUrl, syncStatusOf } from './status.ts';
import * as store from './store.ts';
import type { CheckoutSessionRow } from './table.ts';

/** How long an attempt may stay in flight before another one is allowed (a crashed process). */
const ATTEMPT_LOCK_MS = 60_000;

interface ParsedCard extends CardInput {
  brand: string;
  last4: string;
}

function integer(value: number | string): number | null {
  const text = String(value).trim();
  return /^\d{1,4}$/.test(text) ? Number(text) : null;
}

export function parseCard(input: PayInput): ParsedCard {
  const number = normaliseCardNumber(input.card_number);
  if (number === null || !isLuhnValid(number)) {
    throw new ValidationError('card_number: is not a valid card number.');
  }
  const expMonth = integer(input.exp_month);
  if (expMonth === null || expMonth < 1 || expMonth > 12) {
    throw new ValidationError('exp_month: must be a month from 1 to 12.');
  }
  let expYear = integer(input.exp_year);
  if (expYear !== null && expYear < 100) expYear += 2000;
  if (expYear === null || expYear < 2000) throw new ValidationError('exp_year: must be a year such as 2030.');
  const cvc = String(input.cvc).trim();
  if (!/^\d{3,4}$/.test(cvc)) throw new ValidationError('cvc: must be 3 or 4 digits.');
  const holderName = input.cardholder_name.trim();
  if (!holderName) throw new ValidationError('cardholder_name: may not be blank.');
  return { number, expMonth, expYear, cvc, holderName, brand: cardBrand(number), last4: number.slice(-4) };
}

function assertPayable(session: CheckoutSessionRow, payment: PaymentRow | undefined, now: Date) {
  const state = checkoutState(session, payment, now);
  assertStillOpen(state);
  if (state === 'pending') {
    throw new ConflictError(
      "This checkout's payment is awaiting the bank's decision; check its status instead.",
    );
  }
  if (attemptInFlight(session, now)) {
    throw new ConflictError('A payment attempt for this checkout is already in progress.');
  }
}

/** Step 1: checks the checkout can take an attempt, reserves it, and opens the payment on the first one. */
async function reserveAttempt(ctx: AppContext, sessionId: number) {
  const now = ctx.clock();
  const nowIso = now.toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    const session = await store.lockSession(trx, sessionId);
    const existing = await payments.paymentOfCheckout(trx, session.id);
    assertPayable(session, existing, now);
    await store.updateSession(trx, session.id, {
      attempt_locked_until: new Date(now.getTime() + ATTEMPT_LOCK_MS).toISOString(),
    });
    if (existing) return { session, payment: existing };
    const organization = await store.organizationTerms(trx, session.organization_id);
    const payment = await openPayment(
      trx,
      session,
      {
        feeBp: toBigInt(organization.fee_bp),
        fxEurUsd: ctx.config.fxEurUsd,
        provider: ctx.provider.name,
        items: itemsOf(session),
      },
      nowIso,
    );
    return { session, payment };
  });
}

export async function payCheckout(ctx: AppContext, token: string, input: PayInput) {
  const found = await findSessionByToken(ctx, token);
  assertPayable(found, await payments.paymentOfCheckout(ctx.db, found.id), ctx.clock());
  const card = parseCard(input);
  const { session, payment } = await reserveAttempt(ctx, found.id);
  let recorded: Awaited<ReturnType<typeof applyProviderState>>;
  try {
    const state = await ctx.provider.createPayment({
      reference: payment.public_id,
      environment: session.environment,
      amountMinor: toBigInt(payment.gross),
      currency: payment.currency,
      card,
      simulate: session.environment === 'sandbox' ? session.simulate : null,
      providerPaymentId: payment.provider_payment_id,
      refundBasisMinor: toBigInt(payment.gross_ht),
    });
    recorded = await ctx.db.transaction().execute(async (trx) => {
      const nowIso = ctx.clock().toISOString();
      const newest = state.attempts[0];
      const summary = newest ? { attemptId: newest.attemptId, brand: card.brand, last4: card.last4 } : null;
      const applied = await applyProviderState(trx, payment.id, state, nowIso, summary);
      await store.updateSession(trx, session.id, { attempt_locked_until: null, updated_at: nowIso });
      return applied;
    });
  } catch (error) {
    await store.updateSession(ctx.db, session.id, { attempt_locked_until: null });
    throw error;
  }
  const after = recorded.payment;
  const [attempt] = await payments.attemptsOf(ctx.db, after.id);
  const status = syncStatusOf(checkoutState(session, after, ctx.clock()));
  return {
    status,
    payment_status: after.status,
    transaction_id: after.public_id,
    attempt: attempt ? presentHostedAttempt(attempt) : null,
    redirect_url: redirectUrl(session, status),
  };
}
