// The simulator's database access: its own tables, reached through withTables(), row locks, and the
// contract values its rows stand for.
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../../context.ts';
import type { Database } from '../../db/database.ts';
import type { NextAction, ProviderAttempt, ProviderPaymentState, SavedCard } from '../types.ts';
import type { SimPaymentMethodsTable, SimPaymentsTable, SimulatorTables } from './table.ts';

export function simulatorDb(db: Kysely<Database>) {
  return db.withTables<SimulatorTables>();
}
export type SimDb = ReturnType<typeof simulatorDb>;
export type SimPayment = Selectable<SimPaymentsTable>;
export type SimPaymentMethod = Selectable<SimPaymentMethodsTable>;

/** What every simulator operation needs. */
export interface SimContext {
  db: SimDb;
  /** Row locks on PostgreSQL; SQLite serialises transactions already. */
  postgres: boolean;
  clock: Clock;
  settleDelayMs: number;
  refundDelayMs: number;
  /** timeout_after_success: a successful charge is recorded, then the call fails to answer. */
  fault: 'timeout_after_success' | null;
}

/** Thrown by the timeout_after_success fault: to the caller it is a call that never answered. */
export class SimulatedTimeoutError extends Error {
  constructor() {
    super(
      'simulator: the charge was recorded but no answer came back (KASSA_SIM_FAULT=timeout_after_success)',
    );
  }
}

export async function lockSimPayment(
  ctx: SimContext,
  trx: SimDb,
  column: 'reference' | 'provider_payment_id',
  value: string,
): Promise<SimPayment | undefined> {
  const query = trx.selectFrom('sim_payments').selectAll().where(column, '=', value);
  return (ctx.postgres ? query.forUpdate() : query).executeTakeFirst();
}

export function attemptsOf(row: SimPayment): ProviderAttempt[] {
  return JSON.parse(row.attempts) as ProviderAttempt[];
}

export function nextActionOf(row: { next_action: string | null }): NextAction | null {
  return row.next_action === null ? null : (JSON.parse(row.next_action) as NextAction);
}

export function savedCardOf(method: SimPaymentMethod): SavedCard {
  return {
    paymentMethodId: method.payment_method_id,
    customerId: method.customer_id,
    brand: method.brand,
    last4: method.last4,
    expMonth: Number(method.exp_month),
    expYear: Number(method.exp_year),
  };
}

export function findPaymentMethod(trx: SimDb, paymentMethodId: string) {
  return trx
    .selectFrom('sim_payment_methods')
    .selectAll()
    .where('payment_method_id', '=', paymentMethodId)
    .executeTakeFirst();
}

export async function paymentState(trx: SimDb, row: SimPayment): Promise<ProviderPaymentState> {
  const refunded = Number(row.refunded_amount);
  // The card this payment saved (an off-session charge only used one, it saved nothing).
  const saved =
    row.save_card_for !== null && row.payment_method_id !== null && row.outcome === 'PAYMENT_SUCCESS'
      ? await findPaymentMethod(trx, row.payment_method_id)
      : undefined;
  return {
    providerPaymentId: row.provider_payment_id,
    reference: row.reference,
    outcome: row.outcome,
    depositStatus: row.deposit_status,
    refundState:
      refunded <= 0 ? null : refunded >= Number(row.refund_basis) ? 'FULLY_REFUNDED' : 'PARTIAL_REFUNDED',
    attempts: attemptsOf(row).reverse(),
    nextAction: nextActionOf(row),
    savedCard: saved ? savedCardOf(saved) : null,
  };
}
