// Simulated payments: one per reference (our payment's public id), taking card attempts until one decides
// it, like a PaymentIntent. Each attempt carries the idempotency key of the Kassa write that made it, so
// the same write replays its answer. A 3-D Secure card leaves the attempt waiting on a challenge
// (challenges.ts). Reads settle a pending deposit after KASSA_SIM_SETTLE_DELAY_MS and resolve
// CHECKOUT_PENDING on the third read.
import type { Insertable } from 'kysely';
import { randomBase62 } from '../../lib/ids.ts';
import { cardBrand } from '../cards.ts';
import {
  type ChargeCardInput,
  type ChargeSavedCardInput,
  type NextAction,
  type OpenPaymentInput,
  outcomeOfAttempt,
  type PaymentWrite,
  type ProviderAttempt,
  type ProviderOutcome,
  type ProviderPaymentState,
} from '../types.ts';
import { abandonOpenChallenge, openChallenge } from './challenges.ts';
import {
  type AttemptAnswer,
  answerAttempt,
  answerOffSession,
  behaviourOf,
  type CardBehaviour,
  PENDING_SYNCS_TO_RESOLVE,
} from './script.ts';
import {
  attemptsOf,
  findPaymentMethod,
  lockSimPayment,
  nextActionOf,
  paymentState,
  type SimContext,
  type SimDb,
  type SimPayment,
  SimulatedTimeoutError,
} from './store.ts';
import type { SimPaymentsTable } from './table.ts';

/** What the simulator keeps of a card it may save: never the number. */
export interface CardFacts {
  behaviour: CardBehaviour;
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
}

export function cardFacts(card: { number: string; expMonth: number; expYear: number }): CardFacts {
  return {
    behaviour: behaviourOf(card.number),
    brand: cardBrand(card.number),
    last4: card.number.slice(-4),
    expMonth: card.expMonth,
    expYear: card.expYear,
  };
}

interface AttemptRequest {
  idempotencyKey: string;
  reference: string;
  providerPaymentId: string | null;
  input: OpenPaymentInput | ChargeCardInput | ChargeSavedCardInput;
  simulate: string | null;
  customerId: string | null;
  saveCardFor: string | null;
  /** The card of an on-session attempt, to save it; null off-session (the card is already saved). */
  facts: CardFacts | null;
  paymentMethodId: string | null;
  /** The attempt's answer; `simulate` is the payment's scripted outcome (sandbox), if any. */
  answer: (simulate: string | null) => Promise<AttemptAnswer> | AttemptAnswer;
}

/** A new simulated payment for a reference, taking attempts. */
function newPayment(request: Omit<AttemptRequest, 'answer'>, nowIso: string): Insertable<SimPaymentsTable> {
  const { input } = request;
  return {
    provider_payment_id: `simpay_${randomBase62(24)}`,
    reference: request.reference,
    environment: input.environment,
    amount: Number(input.amountMinor),
    refund_basis: Number(input.refundBasisMinor ?? input.amountMinor),
    currency: input.currency,
    simulate: input.environment === 'sandbox' ? request.simulate : null,
    outcome: 'PROCESSING',
    deposit_status: null,
    deposit_settles_at: null,
    attempts: '[]',
    customer_id: request.customerId,
    payment_method_id: null,
    save_card_for: request.saveCardFor,
    next_action: null,
    created_at: nowIso,
    updated_at: nowIso,
  };
}

/** Creates the simulated payment for a reference once; later calls find the same one. */
async function ensurePayment(sim: SimContext, trx: SimDb, request: Omit<AttemptRequest, 'answer'>) {
  await trx
    .insertInto('sim_payments')
    .values(newPayment(request, sim.clock().toISOString()))
    .onConflict((conflict) => conflict.column('reference').doNothing())
    .execute();
  const row = await lockSimPayment(sim, trx, 'reference', request.reference);
  if (!row) throw new Error('simulator: payment vanished');
  if (request.providerPaymentId !== null && request.providerPaymentId !== row.provider_payment_id) {
    throw new Error('simulator: provider payment id does not match the reference');
  }
  return row;
}

const NOT_TAKING_ATTEMPTS: ProviderOutcome = {
  status: 'failed',
  code: 'payment_unexpected_state',
  message: 'The payment is no longer taking attempts.',
  retryable: false,
};

async function saveCard(sim: SimContext, trx: SimDb, customerId: string, facts: CardFacts) {
  const paymentMethodId = `simpm_${randomBase62(24)}`;
  await trx
    .insertInto('sim_payment_methods')
    .values({
      payment_method_id: paymentMethodId,
      customer_id: customerId,
      behaviour: facts.behaviour,
      brand: facts.brand,
      last4: facts.last4,
      exp_month: facts.expMonth,
      exp_year: facts.expYear,
      created_at: sim.clock().toISOString(),
    })
    .execute();
  return paymentMethodId;
}

/** The attempt as the simulator records it on its payment. */
function recordedAttempt(
  request: AttemptRequest,
  answer: AttemptAnswer,
  providerPaymentId: string,
  nowIso: string,
): ProviderAttempt {
  return {
    attemptId: `simatt_${randomBase62(20)}`,
    status: answer.attemptStatus,
    paymentId: providerPaymentId,
    attemptedAt: nowIso,
    errorMessage: answer.errorMessage,
    paymentMethod: 'card',
    idempotencyKey: request.idempotencyKey,
    declineCode: answer.declineCode,
  };
}

/** What an answer sets on the payment (its outcome, its deposit, its attempts with the new one). */
function answeredColumns(sim: SimContext, answer: AttemptAnswer, attempts: ProviderAttempt[], now: Date) {
  const settlesAt = new Date(now.getTime() + sim.settleDelayMs).toISOString();
  return {
    outcome: answer.outcome,
    deposit_status: answer.depositStatus,
    deposit_settles_at: answer.depositStatus === 'pending' ? settlesAt : null,
    attempts: JSON.stringify(attempts),
    updated_at: now.toISOString(),
  };
}

function keepsCard(answer: AttemptAnswer): boolean {
  return answer.attemptStatus === 'succeeded' || answer.attemptStatus === 'requires_action';
}

/**
 * The first attempt on a reference the simulator has not seen, when it leaves nothing else to record
 * (no 3-D Secure challenge, no card to save): the payment is written once, already answered, in one
 * statement. Null when the reference exists (a replay, or another attempt after a decline) or the answer
 * needs more: the transaction in `attempt` answers then.
 */
async function firstAttemptAtOnce(
  sim: SimContext,
  request: AttemptRequest,
  now: Date,
): Promise<PaymentWrite | null> {
  if (request.providerPaymentId !== null) return null;
  const nowIso = now.toISOString();
  const fresh = newPayment(request, nowIso);
  const answer = await request.answer(fresh.simulate ?? null);
  if (
    answer.attemptStatus === 'requires_action' ||
    (request.facts && request.saveCardFor && keepsCard(answer))
  )
    return null;
  const recorded = recordedAttempt(request, answer, fresh.provider_payment_id, nowIso);
  const row = await sim.db
    .insertInto('sim_payments')
    .values({
      ...fresh,
      ...answeredColumns(sim, answer, [recorded], now),
      payment_method_id: request.paymentMethodId,
    })
    .onConflict((conflict) => conflict.column('reference').doNothing())
    .returningAll()
    .executeTakeFirst();
  if (!row) return null;
  return { outcome: outcomeOfAttempt(recorded, null), payment: await paymentState(sim.db, row) };
}

/**
 * One attempt on the payment of a reference: written at once on a new reference (firstAttemptAtOnce),
 * else recorded in one transaction; the same key replays.
 */
async function attempt(sim: SimContext, request: AttemptRequest): Promise<PaymentWrite> {
  const now = sim.clock();
  const write =
    (await firstAttemptAtOnce(sim, request, now)) ??
    (await sim.db.transaction().execute(async (trx) => {
      let row = await ensurePayment(sim, trx, request);
      const replayed = attemptsOf(row).find((known) => known.idempotencyKey === request.idempotencyKey);
      if (replayed) {
        return {
          outcome: outcomeOfAttempt(replayed, nextActionOf(row)),
          payment: await paymentState(trx, row),
        };
      }
      // A payment that is decided (or waiting on the bank) takes no further attempts.
      if (row.outcome !== 'PROCESSING')
        return { outcome: NOT_TAKING_ATTEMPTS, payment: await paymentState(trx, row) };
      if (row.next_action !== null) row = await abandonOpenChallenge(sim, trx, row);
      const answer = await request.answer(row.simulate);
      const recorded = recordedAttempt(request, answer, row.provider_payment_id, now.toISOString());
      let nextAction: NextAction | null = null;
      if (answer.attemptStatus === 'requires_action') {
        nextAction = await openChallenge(sim, trx, 'payment', row.provider_payment_id, recorded.attemptId);
      }
      let paymentMethodId = request.paymentMethodId ?? row.payment_method_id;
      if (request.facts && request.saveCardFor && keepsCard(answer)) {
        paymentMethodId = await saveCard(sim, trx, request.saveCardFor, request.facts);
      }
      const updated = await trx
        .updateTable('sim_payments')
        .set({
          ...answeredColumns(sim, answer, [...attemptsOf(row), recorded], now),
          payment_method_id: paymentMethodId,
          customer_id: request.customerId ?? row.customer_id,
          next_action: nextAction === null ? null : JSON.stringify(nextAction),
        })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return { outcome: outcomeOfAttempt(recorded, nextAction), payment: await paymentState(trx, updated) };
    }));
  if (sim.fault === 'timeout_after_success' && write.outcome.status === 'succeeded') {
    throw new SimulatedTimeoutError();
  }
  return write;
}

export async function openSimPayment(sim: SimContext, input: OpenPaymentInput) {
  const payment = await sim.db.transaction().execute(async (trx) => {
    const row = await ensurePayment(sim, trx, {
      idempotencyKey: input.idempotencyKey,
      reference: input.reference,
      providerPaymentId: null,
      input,
      simulate: null,
      customerId: input.saveCardFor ?? null,
      saveCardFor: input.saveCardFor ?? null,
      facts: null,
      paymentMethodId: null,
    });
    return paymentState(trx, row);
  });
  return { payment, clientSecret: null };
}

export function chargeSimCard(sim: SimContext, input: ChargeCardInput): Promise<PaymentWrite> {
  const facts = cardFacts(input.card);
  const card = { number: input.card.number, expMonth: input.card.expMonth, expYear: input.card.expYear };
  return attempt(sim, {
    idempotencyKey: input.idempotencyKey,
    reference: input.payment.reference,
    providerPaymentId: input.payment.providerPaymentId,
    input,
    simulate: input.simulate,
    customerId: input.saveCardFor ?? null,
    saveCardFor: input.saveCardFor ?? null,
    facts,
    paymentMethodId: null,
    answer: (simulate) => answerAttempt(card, simulate, sim.clock()),
  });
}

const NO_SUCH_CARD: PaymentWrite = {
  outcome: {
    status: 'failed',
    code: 'resource_missing',
    message: 'No such saved card for this customer.',
    retryable: false,
  },
  payment: null,
};

export async function chargeSimSavedCard(
  sim: SimContext,
  input: ChargeSavedCardInput,
): Promise<PaymentWrite> {
  const method = await findPaymentMethod(sim.db, input.paymentMethodId);
  if (!method || method.customer_id !== input.customerId) return NO_SUCH_CARD;
  const saved = {
    behaviour: method.behaviour,
    expMonth: Number(method.exp_month),
    expYear: Number(method.exp_year),
  };
  return attempt(sim, {
    idempotencyKey: input.idempotencyKey,
    reference: input.payment.reference,
    providerPaymentId: input.payment.providerPaymentId,
    input,
    simulate: null,
    customerId: input.customerId,
    saveCardFor: null,
    facts: null,
    paymentMethodId: method.payment_method_id,
    answer: () => answerOffSession(saved, sim.clock()),
  });
}

/** Once the bank says yes (or the deposit lands), the attempts waiting on it succeed. */
function settleAttempts(attempts: ProviderAttempt[]): string {
  return JSON.stringify(
    attempts.map((known) => (known.status === 'pending' ? { ...known, status: 'succeeded' } : known)),
  );
}

/** A read, which is also when simulated time acts: a deposit settles, the bank decides a pending payment. */
export async function readSimPayment(
  sim: SimContext,
  column: 'provider_payment_id' | 'reference',
  value: string,
): Promise<ProviderPaymentState | null> {
  const now = sim.clock();
  return sim.db.transaction().execute(async (trx) => {
    const row = await lockSimPayment(sim, trx, column, value);
    if (!row) return null;
    let changes: Partial<SimPayment> | null = null;
    if (row.outcome === 'CHECKOUT_PENDING') {
      const reads = Number(row.pending_syncs) + 1;
      changes =
        reads >= PENDING_SYNCS_TO_RESOLVE
          ? {
              pending_syncs: reads,
              outcome: 'PAYMENT_SUCCESS',
              deposit_status: 'succeeded',
              attempts: settleAttempts(attemptsOf(row)),
            }
          : { pending_syncs: reads };
    } else if (
      row.outcome === 'PAYMENT_SUCCESS' &&
      row.deposit_status === 'pending' &&
      row.deposit_settles_at !== null &&
      now.getTime() >= Date.parse(row.deposit_settles_at)
    ) {
      changes = { deposit_status: 'succeeded', attempts: settleAttempts(attemptsOf(row)) };
    }
    if (changes === null) return paymentState(trx, row);
    const updated = await trx
      .updateTable('sim_payments')
      .set({ ...changes, updated_at: now.toISOString() })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return paymentState(trx, updated);
  });
}

/** Stops a payment still taking attempts (a waiting 3-D Secure challenge with it); a decided one stays. */
export async function cancelSimPayment(
  sim: SimContext,
  providerPaymentId: string,
): Promise<ProviderPaymentState | null> {
  return sim.db.transaction().execute(async (trx) => {
    let row = await lockSimPayment(sim, trx, 'provider_payment_id', providerPaymentId);
    if (!row) return null;
    if (row.outcome !== 'PROCESSING') return paymentState(trx, row);
    if (row.next_action !== null) row = await abandonOpenChallenge(sim, trx, row);
    const updated = await trx
      .updateTable('sim_payments')
      .set({ outcome: 'CANCELED', updated_at: sim.clock().toISOString() })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return paymentState(trx, updated);
  });
}
