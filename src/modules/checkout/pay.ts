// POST /api/checkout/{token}/pay/: one card attempt on the simulator's form (a provider with its own form,
// Stripe, refuses card fields here). Recorded in three steps, never holding a transaction across the
// provider call: (1) reserve the attempt, create the payment on the first one, and commit the attempt's
// write-ahead operation row; (2) ask the provider under the row's idempotency key; (3) record its answer
// (an unknown one is left to the reconciler, never tried again). Only the brand and last 4 digits are
// kept; the number is never stored or logged.
import type { AppContext } from '../../context.ts';
import { isLockNotAvailable } from '../../db/errors.ts';
import { ConflictError, ValidationError } from '../../http/errors.ts';
import { toBigInt } from '../../lib/money.ts';
import { cardBrand, isLuhnValid, normaliseCardNumber } from '../../provider/cards.ts';
import { callProvider } from '../../provider/operations/perform.ts';
import {
  countOperations,
  recordNewOperation,
  recordOperation,
  settleOperation,
} from '../../provider/operations/store.ts';
import type { CardInput, PaymentWrite } from '../../provider/types.ts';
import type { RecordedAttempt } from '../payments/attempts.ts';
import * as payments from '../payments/store.ts';
import type { PaymentRow } from '../payments/table.ts';
import { applyProviderState } from '../payments/transitions.ts';
import { savesCardOnly, saveTrialCard, signupCustomer } from '../subscriptions/signup.ts';
import { failAfterDeclineLimit } from './card-testing.ts';
import {
  findSessionAndPaymentByToken,
  paymentMetadata,
  presentHostedAttempt,
  presentNextAction,
} from './hosted.ts';
import { lockLinkForFirstPayment, openCheckoutPaymentUnlessOpen } from './provider-form.ts';
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

const IN_FLIGHT = 'A payment attempt for this checkout is already in progress.';

/** The checkout is open for a card attempt (whether one is in flight is asked apart). */
function assertOpenForAttempt(session: CheckoutSessionRow, payment: PaymentRow | undefined, now: Date) {
  const state = checkoutState(session, payment, now, true);
  assertStillOpen(state);
  if (state === 'pending') {
    throw new ConflictError(
      "This checkout's payment is awaiting the bank's decision; check its status instead.",
    );
  }
}

function assertPayable(session: CheckoutSessionRow, payment: PaymentRow | undefined, now: Date) {
  assertOpenForAttempt(session, payment, now);
  if (attemptInFlight(session, now)) throw new ConflictError(IN_FLIGHT);
}

/**
 * Thrown inside the attempt's transaction (rolling it back) when its first statement, the slot claimed by
 * the checkout's token, cannot decide the attempt alone: no slot (an unknown token, or an attempt in
 * flight), or a subscription's signup (whose card may be only saved, or whose customer is made at the
 * provider first, outside any transaction). The caller then reads the checkout first (payAfterReading).
 */
class ReadFirst extends Error {}

/** Step 1: checks the checkout can take an attempt, reserves it, opens the payment on the first one, and
 * records the attempt's operation row (kassa-pay-{id}-{n}) before the provider hears of it. The checkout
 * is named by its token (the hosted step's first statement: no read before it) or by its id (after the
 * read of payAfterReading, which has made the checks the token's path makes here). `card`: the card, or
 * its refusal, given after the checkout's own refusals as the reading path gives it. */
async function reserveAttempt(
  ctx: AppContext,
  checkout: { id: number } | { token: string },
  card: ParsedCard | ValidationError,
) {
  const now = ctx.clock();
  const nowIso = now.toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    const lockUntil = new Date(now.getTime() + ATTEMPT_LOCK_MS).toISOString();
    // The attempt's slot is taken by the statement that locks the session (no attempt in flight is its
    // condition), which also reads the organization's fee for a payment opened here.
    let claimed = await store.claimAttemptSlot(trx, checkout, nowIso, lockUntil);
    if (claimed === undefined) {
      if ('token' in checkout) throw new ReadFirst('no slot claimed by the token');
      // No slot as the statement saw the session: an attempt is in flight, or was a moment ago (on
      // PostgreSQL a row whose version in the statement's snapshot fails the condition is not waited
      // for, even when the transaction that holds it is about to free the slot). Read again under the
      // lock: refused as the checks refuse it (the checkout's state first), else the slot is free now.
      const locked = await store.lockSession(trx, checkout.id);
      assertPayable(locked, await payments.paymentOfCheckout(trx, locked.id), now);
      claimed = await store.claimAttemptSlot(trx, checkout, nowIso, lockUntil);
      if (claimed === undefined) throw new ConflictError(IN_FLIGHT);
    }
    const { session, feeBp, paymentSeen } = claimed;
    const provider = ctx.providers.forEnvironment(session.environment);
    // The payment as it stood before this transaction, read after the lock in its own statement: on
    // PostgreSQL a locking statement that waited for another attempt's commit sees the latest version of
    // the rows it locks only, so a payment joined into it would be as it stood before that attempt
    // (still processing when it had just been paid or failed). When the claim saw none (a first attempt,
    // most likely) it is not read: the payment is opened at once, and an insert that finds one opened
    // meanwhile by another attempt writes nothing (one payment per checkout, a unique column), and the
    // payment is read then. A refusal below rolls the slot and an opened payment back together.
    let payment = paymentSeen ? await payments.paymentOfCheckout(trx, session.id) : undefined;
    if ('token' in checkout) {
      // What payAfterReading checks before its transaction, in its order.
      if (session.subscription_plan_id !== null) throw new ReadFirst('a signup');
      if (!provider.cardForm) throw new ValidationError(CARD_FORM_ONLY);
      assertOpenForAttempt(session, payment, now);
    }
    if (card instanceof ValidationError) throw card;
    let opened: PaymentRow | undefined;
    let checkedAt = now;
    if (payment === undefined) {
      // A link checkout's first payment takes the link's lock; its expiry is judged after it.
      checkedAt = await lockLinkForFirstPayment(ctx, trx, session, now);
      opened = await openCheckoutPaymentUnlessOpen(ctx, trx, session, provider, nowIso, feeBp);
      if (opened === undefined) payment = await payments.paymentOfCheckout(trx, session.id);
    }
    assertOpenForAttempt(session, payment, checkedAt);
    // A payment opened by this transaction has had no attempt yet: the first needs no count.
    const attemptNumber =
      payment === undefined ? 1 : (await countOperations(trx, 'payment', payment.id, 'payment_attempt')) + 1;
    payment ??= opened;
    if (payment === undefined) throw new Error(`checkout ${session.public_id}: no payment opened`);
    const newOperation = {
      kind: 'payment_attempt',
      idempotencyKey: `kassa-pay-${payment.public_id}-${attemptNumber}`,
      provider: provider.name,
      environment: session.environment,
      organizationId: session.organization_id,
      subjectType: 'payment',
      subjectId: payment.id,
      reference: payment.public_id,
    };
    // A payment this transaction opened has no operation yet: its first one's insert needs nothing back,
    // so it goes with the payment's event in one statement on PostgreSQL (recordNewOperation).
    const operation =
      payment === opened
        ? await recordNewOperation(trx, newOperation, nowIso, ctx.config.reconcileScheduleMs)
        : await recordOperation(trx, newOperation, nowIso, ctx.config.reconcileScheduleMs);
    return { session, payment, operation, provider, card };
  });
}

/** The provider takes the card in its own form (Stripe): card details never reach Kassa. */
const CARD_FORM_ONLY =
  "card_number: this checkout's card is entered in the payment provider's form; card details are not accepted here.";

/** The card, or its refusal (a ValidationError), to be given after the checkout's own refusals. */
function cardOrRefusal(input: PayInput): ParsedCard | ValidationError {
  try {
    return parseCard(input);
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
}

/**
 * The attempt after a read of the checkout by its token (the path of a signup, an unknown token, and an
 * attempt in flight): the refusals in their order (404; a provider with its own form; the checkout's
 * state; the card), a signup's card saved or its customer made, then the attempt reserved by id.
 */
async function payAfterReading(ctx: AppContext, token: string, card: ParsedCard | ValidationError) {
  const { session: found, payment: before } = await findSessionAndPaymentByToken(ctx, token);
  const provider = ctx.providers.forEnvironment(found.environment);
  if (!provider.cardForm) throw new ValidationError(CARD_FORM_ONLY);
  assertPayable(found, before, ctx.clock());
  if (card instanceof ValidationError) throw card;
  // A signup checkout saves the card on the subscription's customer: with a trial it is only saved.
  if (found.subscription_plan_id === null) return charge(ctx, await reserveAttempt(ctx, found, card), null);
  if (await savesCardOnly(ctx.db, found)) return saveTrialCard(ctx, found, card);
  const saveCardFor = await signupCustomer(ctx, found);
  return charge(ctx, await reserveAttempt(ctx, found, card), saveCardFor);
}

export async function payCheckout(ctx: AppContext, token: string, input: PayInput) {
  const parsed = cardOrRefusal(input);
  // Most attempts: the slot claimed by the checkout's token is the attempt's first statement.
  let reserved: Awaited<ReturnType<typeof reserveAttempt>>;
  try {
    reserved = await reserveAttempt(ctx, { token }, parsed);
  } catch (error) {
    if (!(error instanceof ReadFirst)) throw error;
    return payAfterReading(ctx, token, parsed);
  }
  return charge(ctx, reserved, null);
}

/** Steps 2 and 3: the provider asked under the reserved attempt's key, and its answer recorded. */
async function charge(
  ctx: AppContext,
  { session, payment, operation, provider, card }: Awaited<ReturnType<typeof reserveAttempt>>,
  /** The signup's customer the card is saved on (null: not a signup). */
  saveCardFor: string | null,
) {
  const call = await callProvider(ctx.config, operation, () =>
    provider.chargeCard({
      idempotencyKey: operation.idempotency_key,
      payment: { reference: payment.public_id, providerPaymentId: payment.provider_payment_id },
      environment: session.environment,
      amountMinor: toBigInt(payment.gross),
      currency: payment.currency,
      refundBasisMinor: toBigInt(payment.gross_ht),
      card,
      saveCardFor,
      simulate: session.environment === 'sandbox' ? session.simulate : null,
      metadata: paymentMetadata(session, payment),
    }),
  );
  const write: PaymentWrite = call.answered
    ? call.value
    : { outcome: { status: 'unknown', reason: call.reason }, payment: null };
  // Step 3. The payment is locked and its attempts read in one statement, which on PostgreSQL fails
  // rather than wait when another transaction holds the payment (a sync or the reconciler, rarely): then
  // the transaction is rolled back with nothing written and run again, locking first (applyProviderState).
  const recordAnswer = (lockWithoutWaiting: boolean) =>
    ctx.db.transaction().execute(async (trx) => {
      const nowIso = ctx.clock().toISOString();
      const state = write.payment;
      let current = payment;
      // The payment's attempts, newest first, when this transaction recorded them (null: read after).
      let attempts: RecordedAttempt[] | null = null;
      if (state) {
        const own = state.attempts.find((attempt) => attempt.idempotencyKey === operation.idempotency_key);
        const summary = own ? { attemptId: own.attemptId, brand: card.brand, last4: card.last4 } : null;
        const fromProvider = await applyProviderState(
          trx,
          payment.id,
          state,
          nowIso,
          summary,
          session,
          lockWithoutWaiting,
        );
        const applied = await failAfterDeclineLimit(trx, fromProvider, nowIso);
        current = applied.payment;
        attempts = applied.attempts;
      }
      await settleOperation(
        trx,
        operation.id ?? { key: operation.idempotency_key },
        write.outcome,
        state?.providerPaymentId ?? null,
        nowIso,
      );
      // An unknown answer keeps the lock: no second attempt until the reconciler has read the first back.
      if (write.outcome.status !== 'unknown') {
        await store.updateSession(trx, session.id, { attempt_locked_until: null, updated_at: nowIso });
      }
      return { payment: current, attempts };
    });
  const recorded = await recordAnswer(true).catch((error: unknown) => {
    if (isLockNotAvailable(error)) return recordAnswer(false);
    throw error;
  });
  const [attempt] = recorded.attempts ?? (await payments.attemptsOf(ctx.db, recorded.payment.id));
  const after = recorded.payment;
  // The slot was freed with the answer (an unknown one keeps it: the bank may still decide).
  const settled = write.outcome.status === 'unknown' ? session : { ...session, attempt_locked_until: null };
  const status = syncStatusOf(checkoutState(settled, after, ctx.clock()));
  return {
    status,
    payment_status: after.status,
    transaction_id: after.public_id,
    attempt: attempt ? presentHostedAttempt(attempt) : null,
    redirect_url: redirectUrl(session, status),
    outcome: write.outcome.status,
    next_action: presentNextAction(after),
  };
}
