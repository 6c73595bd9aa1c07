// transaction.status_changed: the one builder of its payload, and the one emitter. Call the emitter in
// the transaction of the change; the webhook's `amount` is the net and `gross_amount` the gross.
import type { Executor } from '../../db/database.ts';
import { formatAmount, percentNumber, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { deferEvent, emitEvent } from '../events/emit.ts';
import { presentAttempt, presentReferences } from './present.ts';
import * as store from './store.ts';
import type { PaymentRow } from './table.ts';

/**
 * What a payment's payload shows besides the payment row: its checkout's references (set when the
 * checkout is created, never changed after) and its attempts, newest first, as they stand in the
 * caller's transaction. A caller that holds both passes them; otherwise they are read.
 */
export interface PaymentEventContext {
  checkout: store.CheckoutReference;
  attempts: store.PresentedAttempt[];
}

/** The payload of a payment as it is now (also what a manual resend sends). */
export async function transactionEventPayload(
  db: Executor,
  payment: PaymentRow,
  known: PaymentEventContext | null = null,
) {
  const { attempts, checkout } = known ?? (await store.eventReadOfPayment(db, payment));
  return {
    transaction_id: payment.public_id,
    order_id: checkout.public_id,
    amount: formatAmount(toBigInt(payment.net)),
    gross_amount: formatAmount(toBigInt(payment.gross)),
    fee_percent: percentNumber(toBigInt(payment.fee_bp)),
    status: payment.status,
    currency: payment.currency,
    depositAttempts: attempts.map(presentAttempt),
    simulated: payment.simulated === 1,
    created_at: payment.created_at,
    updated_at: payment.updated_at,
    ...presentReferences(checkout),
  };
}

export async function emitPaymentEvent(
  trx: Executor,
  payment: PaymentRow,
  now: string,
  known: PaymentEventContext | null = null,
): Promise<void> {
  await deferEvent(trx, {
    organizationId: payment.organization_id,
    environment: payment.environment,
    type: 'transaction.status_changed',
    subject: payment.public_id,
    payload: await transactionEventPayload(trx, payment, known),
    now,
  });
}

/** A checkout canceled before any card attempt: no payment, so no transaction id and no fee. */
export async function emitCanceledCheckoutEvent(
  trx: Executor,
  checkout: {
    organizationId: number;
    environment: Environment;
    publicId: string;
    gross: bigint;
    currency: string;
    feeBp: bigint;
    createdAt: string;
    metadata: string | null;
    clientReferenceId: string | null;
    subscriptionPublicId?: string | null;
  },
  now: string,
): Promise<void> {
  const total = formatAmount(checkout.gross);
  await emitEvent(trx, {
    organizationId: checkout.organizationId,
    environment: checkout.environment,
    type: 'transaction.status_changed',
    subject: checkout.publicId,
    payload: {
      transaction_id: null,
      order_id: checkout.publicId,
      amount: total,
      gross_amount: total,
      fee_percent: percentNumber(checkout.feeBp),
      status: 'canceled',
      currency: checkout.currency,
      depositAttempts: [],
      created_at: checkout.createdAt,
      updated_at: now,
      ...presentReferences({
        metadata: checkout.metadata,
        client_reference_id: checkout.clientReferenceId,
        subscription_public_id: checkout.subscriptionPublicId ?? null,
      }),
    },
    now,
  });
}
